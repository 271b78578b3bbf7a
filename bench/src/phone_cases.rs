//! The phone shape's cases of the tools other than `read_messages` and `search_messages`
//! (issue 29 item 2), end to end through `/mcp` with the minimal client at concurrency 2:
//! `list_chats` (the default page, a name several chats share, a name only one chat has) in the
//! `reads` phase; `search_contacts` (a first name, phone digits), `search_groups` (a word of a
//! group's name) and `search_attachments` (a word of document file names, one photo's whole
//! file name, `kinds` document and image) in the `search` phase. The queries are the ones the
//! generator picked from what it made ([`crate::phone_lookups`]).
//!
//! A latency is only worth something when the call found what it should, and a tool that
//! answers an empty list quickly looks like a fast tool. So each case is counted in Postgres
//! first (the same conditions as the worker's statement, over the whole archive), called once
//! to see what it returns, and checked: a query that should hit must find something, and the
//! tool must return as many as there are, up to its page. A case that fails its check is still
//! measured, and the run fails at its end, after the figures are written.

use serde_json::{Value, json};
use wazap_shared::ids::DEFAULT_ACCOUNT;
use wazap_shared::wire::{read, search};
use wazap_tests::Stack;

use crate::ingest::PhoneRun;
use crate::latency::{Call, Client, Report, measure_with};
use crate::raw_mcp::RawMcp;

/// Issue 29's goal for every case.
const BUDGET: &str = "p50 ≤ 3 ms, p99 ≤ 10 ms (issue 29)";

/// Which phase's cases to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// `list_chats`.
    Reads,
    /// `search_contacts`, `search_groups`, `search_attachments`.
    Search,
}

/// One measured call: the tool, what it asks, and how to count what it should find.
struct Case {
    tool: &'static str,
    label: String,
    args: Value,
    /// The result's list of what was found (`chats`, `contacts`…).
    key: &'static str,
    /// The tool's default page, which the cases do not change.
    page: u32,
    count: Count,
}

/// What Postgres counts for a case: the worker's conditions, over the whole archive.
enum Count {
    /// Chats with messages, by display name.
    Chats { name: Option<String> },
    /// Direct chats with messages or in the phonebook, by name or phone digits.
    Contacts {
        name: String,
        digits: Option<String>,
    },
    /// Groups by name.
    Groups { name: String },
    /// Files of readable messages, by file name or caption, and by kind.
    Attachments {
        text: Option<String>,
        kinds: Option<Vec<String>>,
    },
}

/// The cases of `phase`, from the picks of `p`; a pick the archive could not give is a
/// skipped case (a tiny archive may hold no document), said so.
fn cases(phase: Phase, p: &PhoneRun, skipped: &mut Vec<String>) -> Vec<Case> {
    let l = &p.summary.lookups;
    let mut out = Vec::new();
    let mut missing = |what: &str| skipped.push(format!("no {what} to ask for"));
    match phase {
        Phase::Reads => {
            let chats = |label: String, args: Value, name: Option<String>| Case {
                tool: "list_chats",
                label,
                args,
                key: "chats",
                page: read::DEFAULT_LIMIT,
                count: Count::Chats { name },
            };
            out.push(chats("default page".into(), json!({}), None));
            match &l.shared_name {
                Some((name, n)) => out.push(chats(
                    format!("query `{name}`, a last name {n} chats share"),
                    json!({"query": name}),
                    Some(name.clone()),
                )),
                None => missing("last name several chats share"),
            }
            match &l.unique_name {
                Some(name) => out.push(chats(
                    format!("query `{name}`, one chat's name"),
                    json!({"query": name}),
                    Some(name.clone()),
                )),
                None => missing("name only one chat has"),
            }
        }
        Phase::Search => {
            let contacts = |label: String, query: &str, digits: Option<String>| Case {
                tool: "search_contacts",
                label,
                args: json!({"query": query}),
                key: "contacts",
                page: read::DEFAULT_SEARCH_LIMIT,
                count: Count::Contacts {
                    name: query.to_owned(),
                    digits,
                },
            };
            match &l.first_name {
                Some(first) => out.push(contacts(format!("first name `{first}`"), first, None)),
                None => missing("first name"),
            }
            match &l.digits {
                Some(d) => out.push(contacts(format!("phone digits `{d}`"), d, Some(d.clone()))),
                None => missing("phone number"),
            }
            match &l.group_word {
                Some(word) => out.push(Case {
                    tool: "search_groups",
                    label: format!("name word `{word}`"),
                    args: json!({"query": word}),
                    key: "groups",
                    page: read::DEFAULT_SEARCH_LIMIT,
                    count: Count::Groups { name: word.clone() },
                }),
                None => missing("group name"),
            }
            let files = |label: String, args: Value, text: Option<&str>, kind: Option<&str>| Case {
                tool: "search_attachments",
                label,
                args,
                key: "attachments",
                page: search::DEFAULT_SEARCH_LIMIT,
                count: Count::Attachments {
                    text: text.map(str::to_owned),
                    kinds: kind.map(|k| vec![k.to_owned()]),
                },
            };
            match &l.file_word {
                Some((word, n)) => out.push(files(
                    format!("file name word `{word}`, in {n} document names"),
                    json!({"query": word}),
                    Some(word),
                    None,
                )),
                None => missing("document file name"),
            }
            match &l.photo_name {
                Some(name) => out.push(files(
                    format!("whole file name `{name}`"),
                    json!({"query": name}),
                    Some(name),
                    None,
                )),
                None => missing("photo file name"),
            }
            for kind in ["document", "image"] {
                out.push(files(
                    format!("kinds [{kind}]"),
                    json!({"kinds": [kind]}),
                    None,
                    Some(kind),
                ));
            }
        }
    }
    out
}

/// The calls of both phases' cases (none for another shape), for the `plans` phase.
pub(crate) fn calls(phone: Option<&PhoneRun>) -> Vec<Call> {
    let Some(p) = phone else {
        return Vec::new();
    };
    let mut skipped = Vec::new();
    [Phase::Reads, Phase::Search]
        .into_iter()
        .flat_map(|phase| cases(phase, p, &mut skipped))
        .map(|c| Call {
            tool: c.tool,
            label: format!("{}, {}", c.tool, c.label),
            args: c.args,
        })
        .collect()
}

/// The cases of a phone-shaped run, with the figures and checks of every case run.
#[derive(Debug, Clone, Default)]
pub(crate) struct PhoneCases {
    /// The phone shape's run (nothing to measure without one).
    phone: Option<PhoneRun>,
    /// Measured calls per case.
    requests: usize,
    /// Every case: its tool, arguments, hits, what it returned, latency.
    cases: Vec<Value>,
    /// Cases that found nothing, or not what Postgres counts.
    failures: Vec<String>,
    /// Cases the archive gave nothing to ask for.
    skipped: Vec<String>,
}

impl PhoneCases {
    /// The cases of `phone` (none for another shape), `requests` calls each.
    pub(crate) fn new(phone: Option<PhoneRun>, requests: usize) -> Self {
        Self {
            phone,
            requests,
            ..Self::default()
        }
    }

    /// Run `phase`'s cases on `stack` through the gateway at `url` with `token`, adding the
    /// latency rows to `report`.
    pub(crate) async fn run(
        &mut self,
        phase: Phase,
        stack: &Stack,
        url: &str,
        token: &str,
        report: &mut Report,
    ) -> anyhow::Result<()> {
        let Some(phone) = self.phone.clone() else {
            return Ok(());
        };
        let probe = RawMcp::new(url, token)?;
        for case in cases(phase, &phone, &mut self.skipped) {
            let (hits, returned) = self.check(stack, &probe, &case).await?;
            let l = measure_with(
                url,
                token,
                case.tool,
                &case.args,
                self.requests,
                Client::Raw,
            )
            .await?;
            let what = format!(
                "{}, {} ({hits} hits, {returned} returned)",
                case.tool, case.label
            );
            let name = match phase {
                Phase::Reads => format!("{what}, minimal client"),
                Phase::Search => what,
            };
            self.cases.push(json!({
                "tool": case.tool, "case": case.label, "arguments": case.args,
                "hits": hits, "returned": returned,
                "p50_ms": l.p50_ms, "p99_ms": l.p99_ms, "max_ms": l.max_ms,
            }));
            report.push(&name, BUDGET, l);
        }
        Ok(())
    }

    /// Count `case` in Postgres and call it once: (hits, returned); a failed check recorded.
    async fn check(
        &mut self,
        stack: &Stack,
        probe: &RawMcp,
        case: &Case,
    ) -> anyhow::Result<(i64, i64)> {
        let hits = count(stack, &case.count).await?;
        let result = probe.call_result(case.tool, &case.args).await?;
        let returned = result["structuredContent"][case.key]
            .as_array()
            .map_or(0, Vec::len) as i64;
        let page = i64::from(case.page);
        eprintln!(
            "wazap-bench: {}, {} ({hits} hits, {returned} returned)",
            case.tool, case.label
        );
        let what = format!("{}, {}", case.tool, case.label);
        if hits == 0 {
            self.failures.push(format!(
                "{what}: Postgres finds nothing for what the generator made"
            ));
        } else if returned == 0 {
            self.failures
                .push(format!("{what}: returned nothing, Postgres counts {hits}"));
        } else if returned != hits.min(page) {
            self.failures.push(format!(
                "{what}: returned {returned}, Postgres counts {hits} (page {page})"
            ));
        }
        Ok((hits, returned))
    }
}

/// What the worker should find for `c` in the default account, counted in Postgres.
async fn count(stack: &Stack, c: &Count) -> anyhow::Result<i64> {
    let db = stack.pool.get().await?;
    let row = match c {
        Count::Chats { name } => {
            let name = name.as_deref().map(contains_pattern);
            db.query_one(
                "select count(*) from chats c
                  where c.account_id = $1 and c.last_message_at is not null
                    and ($2::text is null
                         or coalesce(c.name, c.push_name, '+' || c.phone) ilike $2)",
                &[&DEFAULT_ACCOUNT, &name],
            )
            .await?
        }
        Count::Contacts { name, digits } => {
            let digits = digits.as_deref().map(contains_pattern);
            db.query_one(
                "select count(*) from chats c
                  where c.account_id = $1 and c.kind = 'direct'
                    and (c.last_message_at is not null or exists (
                         select 1 from contacts k
                          where k.account_id = c.account_id and k.chat_id = c.chat_id))
                    and (coalesce(c.name, c.push_name, '') ilike $2
                         or ($3::text is not null and c.phone like $3))",
                &[&DEFAULT_ACCOUNT, &contains_pattern(name), &digits],
            )
            .await?
        }
        Count::Groups { name } => {
            db.query_one(
                "select count(*) from chats c
                  where c.account_id = $1 and c.kind = 'group' and c.name ilike $2",
                &[&DEFAULT_ACCOUNT, &contains_pattern(name)],
            )
            .await?
        }
        Count::Attachments { text, kinds } => {
            // As the worker reads a query: part of the file name, or every word of the caption
            // whole (the cases' queries carry no accents, so lower-cased words are the index's
            // lexemes).
            let words = text.as_deref().map(|t| {
                t.split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(|w| format!("'{}'", w.to_lowercase()))
                    .collect::<Vec<_>>()
                    .join(" & ")
            });
            let text = text.as_deref().map(contains_pattern);
            db.query_one(
                "select count(*) from attachments a
                   join messages m on m.account_id = a.account_id and m.message_id = a.message_id
                  where a.account_id = $1 and not a.story and not m.private
                    and m.kind <> 'deleted'
                    and ($2::text is null or a.filename ilike $2
                         or m.search @@ ($4::text)::tsquery)
                    and ($3::text[] is null or a.kind = any($3))",
                &[&DEFAULT_ACCOUNT, &text, kinds, &words],
            )
            .await?
        }
    };
    Ok(row.get(0))
}

/// `%text%` for `like`, its wildcards escaped (as the worker builds its patterns).
fn contains_pattern(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

impl PhoneCases {
    /// Print what was skipped and every failed check.
    pub(crate) fn print(&self) {
        for s in &self.skipped {
            println!("SKIPPED: {s}");
        }
        for f in &self.failures {
            println!("FAILED: {f}");
        }
    }

    /// The figures as JSON.
    pub(crate) fn to_json(&self) -> Value {
        json!({"cases": self.cases, "failures": self.failures, "skipped": self.skipped})
    }

    /// An error when a case failed its check.
    pub(crate) fn verdict(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.failures.is_empty(),
            "{} phone case(s) did not find what they should: {}",
            self.failures.len(),
            self.failures.join("; ")
        );
        Ok(())
    }
}
