//! Phase 4: search. `search_messages` end to end through `/mcp` at concurrency 2 for a rare
//! word, a common word (≈8k hits at 1M), a prefix and a very common word; `get_attachment` of a
//! photo whose bytes are cached; and EXPLAIN (ANALYZE) of the worker's search statement run as
//! a prepared statement after six executions, when Postgres may have switched to a generic plan
//! (DESIGN §11's trap), so the plans can be checked for a parallel `Gather` or for a time-order
//! walk over a rare word. With `--shape phone` (issue 29), the words instead are those the
//! phone shape picked from the archive it made, one per frequency decade, plus a two-word query
//! and a prefix, each alone, within one month (`since`/`until`) and within the busiest chat
//! (`chat_id`), with the minimal client; each case's hits, p50 and p99 also go to the JSON.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use wazap_shared::ids::DEFAULT_ACCOUNT;
use wazap_tests::{Mcp, Stack};

use crate::dataset::RARE_WORD;
use crate::ingest::PhoneRun;
use crate::latency::{Call, Client, Report, measure, measure_with};

/// The worker's `search_messages` statement for whole words, for a connection that reads every
/// chat and passes no filter (worker/src/archive/read/search/buckets.rs, scope conditions
/// `true`): probes of the words in one time bucket at a time, newest first, each fenced.
/// $1 account, $2 the tsquery text, $3 the limit, $4 the bucket size (a shift of Unix time).
const BUCKETS_SQL: &str = "with s as materialized (select ($2::text)::tsquery as q)
  select h.message_id, h.ts, h.text
    from (select x.* from generate_series(
                 search_bucket($4, (select max(ts) from messages where account_id = $1)),
                 search_bucket($4, (select min(ts) from messages where account_id = $1)), -1) b(n),
            lateral (select m.* from (select m.account_id, m.message_id, m.chat_id, m.position,
                                             m.ts, m.text, m.private
                                        from messages m, s
                                       where m.search @@ s.q
                                         and m.search_keys @@ (quote_literal(search_bucket_key($4, b.n)))::tsquery
                                      offset 0) m
                      where m.account_id = $1 and not m.private and true and true
                      order by m.ts desc, m.position desc) x
           limit (select $3::int8)) h
    left join lateral (select a.attachment_id from attachments a
                        where a.account_id = h.account_id and a.message_id = h.message_id
                       offset 0) a on true
   order by h.ts desc, h.position desc";
/// The bucket size [`BUCKETS_SQL`] is explained at: ~36 hours, the middle one.
const BUCKET_SHIFT: i32 = 17;
/// The worker's statements for a prefix (worker/src/archive/read/search/walk.rs): first the
/// word index, capped at 1,000 hits; for a prefix with that many, a walk newest first.
/// $1 account, $2 the tsquery text, $3 the limit ($4 unused, for one `execute` shape).
const BY_WORD_SQL: &str = "with s as materialized (select ($2::text)::tsquery as q),
  w as materialized (
    select m.account_id, m.message_id, m.chat_id, m.position, m.ts, m.kind, m.from_me,
           m.sender_name, m.sender_chat_id, m.text
      from messages m, s
     where m.search @@ s.q and m.account_id = $1 and not m.private and true and true
     limit 1000)
  select h.message_id, h.ts, h.text, n.count, $4::int4
    from (select * from w order by ts desc, position desc limit (select $3::int8)) h
    left join lateral (select a.attachment_id from attachments a
                        where a.account_id = h.account_id and a.message_id = h.message_id
                       offset 0) a on true,
    (select count(*) from w) n
   order by h.ts desc, h.position desc";
/// The walk (see [`BY_WORD_SQL`]).
const BY_TIME_SQL: &str = "select h.message_id, h.ts, h.text, $4::int4
    from (select m.account_id, m.message_id, m.chat_id, m.position, m.ts, m.text
            from messages m, (select ($2::text)::tsquery as q) s
           where m.search @@ s.q and m.account_id = $1 and not m.private and true and true
           order by m.ts desc, m.position desc limit $3) h
    left join lateral (select a.attachment_id from attachments a
                        where a.account_id = h.account_id and a.message_id = h.message_id
                       offset 0) a on true
   order by h.ts desc, h.position desc";
/// The hit count from which the worker walks by time.
const CAP: i64 = 1_000;

/// The prefix query: the start of [`crate::dataset::COMMON_WORD`].
const PREFIX: &str = "orçam";

/// One measured query: its label, the agent's query, the tsquery text for EXPLAIN, its budget,
/// and the filters it passes (a chat id, a `since`/`until` range).
#[derive(Clone)]
struct Case {
    label: String,
    query: String,
    tsquery: String,
    budget: &'static str,
    chat: Option<String>,
    range: Option<(DateTime<Utc>, DateTime<Utc>)>,
}

impl Case {
    fn plain(label: &str, query: String, tsquery: String, budget: &'static str) -> Self {
        Self {
            label: label.into(),
            query,
            tsquery,
            budget,
            chat: None,
            range: None,
        }
    }

    /// The tool's arguments: the query, the 20 newest, and the case's filters.
    fn args(&self) -> Value {
        let mut args = json!({"query": self.query, "limit": 20});
        if let Some(chat) = &self.chat {
            args["chat_id"] = json!(chat);
        }
        if let Some((since, until)) = self.range {
            args["since"] = json!(since.to_rfc3339_opts(SecondsFormat::Secs, true));
            args["until"] = json!(until.to_rfc3339_opts(SecondsFormat::Secs, true));
        }
        args
    }
}

/// Issue 29's goal for every search of the phone shape.
const PHONE_BUDGET: &str = "p50 ≤ 3 ms, p99 ≤ 10 ms (issue 29)";

/// The phone shape's cases: each picked word, the two-word query and the prefix, each alone,
/// within one month, and within the busiest chat.
fn phone_cases(p: &PhoneRun, busy_chat_id: &str) -> Vec<Case> {
    let s = &p.summary;
    let mut base: Vec<Case> = s
        .picks
        .iter()
        .map(|w| {
            let label = format!(
                "word of ≈{} messages ({}, {} counted)",
                w.decade, w.written, w.count
            );
            Case::plain(
                &label,
                w.written.clone(),
                format!("'{}'", w.folded),
                PHONE_BUDGET,
            )
        })
        .collect();
    if let Some((query, tsquery)) = &s.pair {
        let label = format!("two words ({query})");
        base.push(Case::plain(
            &label,
            query.clone(),
            tsquery.clone(),
            PHONE_BUDGET,
        ));
    }
    if let Some((query, tsquery)) = &s.prefix {
        let label = format!("prefix ({query})");
        base.push(Case::plain(
            &label,
            query.clone(),
            tsquery.clone(),
            PHONE_BUDGET,
        ));
    }
    let mut cases = Vec::with_capacity(base.len() * 3);
    for c in base {
        let month = Case {
            label: format!("{}, one month", c.label),
            range: Some(s.month),
            ..c.clone()
        };
        let chat = Case {
            label: format!("{}, busiest chat", c.label),
            chat: Some(busy_chat_id.to_owned()),
            ..c.clone()
        };
        cases.extend([c, month, chat]);
    }
    cases
}

/// The cases of this phase: the phone shape's (with `phone`) or the synthetic archive's words.
fn cases(phone: Option<&PhoneRun>, busy_chat_id: &str) -> Vec<Case> {
    match phone {
        Some(p) => phone_cases(p, busy_chat_id),
        None => vec![
            Case::plain(
                "rare word",
                RARE_WORD.into(),
                format!("'{RARE_WORD}'"),
                "p50 ≤ 2 ms, p99 ≤ 40 ms",
            ),
            // Unaccented on purpose: the index folds accents.
            Case::plain(
                "common word",
                "orcamento".into(),
                "'orcamento'".into(),
                "p50 ≤ 15 ms, p99 ≤ 40 ms",
            ),
            // Folded, as the worker folds the agent's query.
            Case::plain(
                "prefix",
                format!("{PREFIX}*"),
                "'orcam':*".into(),
                "p50 ≤ 15 ms, p99 ≤ 40 ms",
            ),
            Case::plain(
                "very common word",
                "meeting".into(),
                "'meeting'".into(),
                "(for attribution)",
            ),
        ],
    }
}

/// The `search_messages` calls this phase measures, for the `plans` phase.
pub(crate) fn calls(phone: Option<&PhoneRun>, busy_chat_id: &str) -> Vec<Call> {
    cases(phone, busy_chat_id)
        .iter()
        .map(|c| Call {
            tool: "search_messages",
            label: format!("search_messages, {}", c.label),
            args: c.args(),
        })
        .collect()
}

/// What this phase found beside the latency rows.
#[derive(Debug, Clone, Default)]
pub(crate) struct SearchFigures {
    /// (label, matching messages, the plan of the prepared query after six runs).
    plans: Vec<(String, i64, String)>,
    /// Plans that show the traps: a parallel plan, or a rare word not led by the word index.
    warnings: Vec<String>,
    /// Every case: its query, filters, hits and latency.
    cases: Vec<Value>,
}

/// Measure the search tools on `stack` through the gateway at `url` with `token`, adding the
/// latency rows to `report`; `requests` calls per case. With `phone`, the phone shape's words
/// (picked from the archive it made), also within a month and within `busy_chat_id`.
pub(crate) async fn run(
    stack: &Stack,
    url: &str,
    token: &str,
    requests: usize,
    report: &mut Report,
    phone: Option<&PhoneRun>,
    busy_chat_id: &str,
) -> anyhow::Result<SearchFigures> {
    let cases = cases(phone, busy_chat_id);
    let mut figures = SearchFigures::default();
    let client = stack.pool.get().await?;
    client
        .batch_execute("set max_parallel_workers_per_gather = 0")
        .await?;
    for (n, case) in cases.iter().enumerate() {
        let (since, until) = case.range.unzip();
        let hits: i64 = client
            .query_one(
                "select count(*) from messages
                  where search @@ ($1::text)::tsquery and not private
                    and ($2::text is null or chat_id = $2)
                    and ($3::timestamptz is null or ts >= $3)
                    and ($4::timestamptz is null or ts < $4)",
                &[&case.tsquery, &case.chat, &since, &until],
            )
            .await?
            .get(0);
        eprintln!("wazap-bench: search_messages, {} ({hits} hits)", case.label);
        let args = case.args();
        // The phone shape measures with the minimal client (the server's share, as issue 29's
        // figures); the synthetic one as it always did.
        let client_kind = if phone.is_some() {
            Client::Raw
        } else {
            Client::Rmcp
        };
        let l = measure_with(url, token, "search_messages", &args, requests, client_kind).await?;
        let name = format!("search_messages, {} ({hits} hits, 20 newest)", case.label);
        figures.cases.push(json!({
            "case": case.label, "query": case.query, "chat_id": case.chat,
            "since": since, "until": until, "hits": hits,
            "p50_ms": l.p50_ms, "p99_ms": l.p99_ms, "max_ms": l.max_ms,
        }));
        report.push(&name, case.budget, l);
        if case.chat.is_some() || case.range.is_some() {
            // The statements below are those of an unfiltered search.
            continue;
        }
        if n == 0 && phone.is_none() {
            // The rare word's time is mostly the HTTP/NATS path, and rmcp's client, sharing
            // the two cores, adds 0.25–0.5 ms a call (rmcp 3.11's client turns its connection
            // pool off, so every call opens a TCP connection): the minimal client, one
            // keep-alive connection, shows the server's share, as the read phase does.
            let l =
                measure_with(url, token, "search_messages", &args, requests, Client::Raw).await?;
            let name = format!(
                "(attribution) search_messages, {} ({hits} hits), minimal client",
                case.label
            );
            report.push(&name, "(for attribution)", l);
        }
        // EXPLAIN (ANALYZE) of the statement the worker runs for this word, prepared (as the
        // worker's statements are) and executed six times first.
        let prefix = case.query.ends_with('*');
        let sql = match (prefix, hits >= CAP) {
            (false, _) => BUCKETS_SQL,
            (true, true) => BY_TIME_SQL,
            (true, false) => BY_WORD_SQL,
        };
        let stmt = format!("wazap_bench_search_{n}");
        client
            .batch_execute(&format!("prepare {stmt}(text, text, int8, int4) as {sql}"))
            .await?;
        let quoted = case.tsquery.replace('\'', "''");
        let exec = format!("execute {stmt}('{DEFAULT_ACCOUNT}', '{quoted}', 20, {BUCKET_SHIFT})");
        for _ in 0..6 {
            client.batch_execute(&exec).await?;
        }
        let plan = client
            .query(&format!("explain (analyze, costs off) {exec}"), &[])
            .await?
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n");
        // The word-index statement hides the words from the planner, so its generic plan is
        // its plan: a search planned anew at every call pays for nothing.
        let generic: i64 = client
            .query_one(
                "select generic_plans from pg_prepared_statements where name = $1",
                &[&stmt],
            )
            .await?
            .get(0);
        client.batch_execute(&format!("deallocate {stmt}")).await?;
        if (!prefix || hits < CAP) && generic == 0 {
            figures.warnings.push(format!(
                "{}: the word-index statement is planned at every call (no generic plan)",
                case.label
            ));
        }
        if plan.contains("Gather") {
            figures
                .warnings
                .push(format!("{}: a parallel plan", case.label));
        }
        if (!prefix || hits < CAP) && plan.contains("messages_recent on messages m (") {
            figures.warnings.push(format!(
                "{}: {hits} hits walked by time instead of the word index",
                case.label
            ));
        }
        figures.plans.push((case.label.clone(), hits, plan));
    }
    // A failing get_attachment (e.g. the media store unavailable) must not lose the rest.
    if let Err(e) = attachment(url, token, requests, report).await {
        eprintln!("wazap-bench: get_attachment: {e:#}");
        figures
            .warnings
            .push(format!("get_attachment not measured: {e:#}"));
    }
    Ok(figures)
}

/// `get_attachment` of one of the synthetic photos (bytes cached at ingest), when there is one.
async fn attachment(
    url: &str,
    token: &str,
    requests: usize,
    report: &mut Report,
) -> anyhow::Result<()> {
    eprintln!("wazap-bench: get_attachment");
    let mcp = Mcp::connect(url, token).await?;
    let found = mcp
        .call(
            "search_attachments",
            json!({"kinds": ["image"], "limit": 1}),
        )
        .await?;
    let first = found.ok()["attachments"].get(0).cloned();
    mcp.close().await;
    let Some(first) = first else {
        eprintln!("wazap-bench: no image attachment in the archive; get_attachment skipped");
        return Ok(());
    };
    let size = first["size"].as_u64().unwrap_or_default();
    let args = json!({"attachment_id": first["attachment_id"]});
    let l = measure(url, token, "get_attachment", &args, requests).await?;
    let name = format!("get_attachment ({size}-byte JPEG, bytes cached)");
    report.push(&name, "(throughput)", l);
    Ok(())
}

impl SearchFigures {
    /// Print the plans and any warning.
    pub(crate) fn print(&self) {
        for (label, hits, plan) in &self.plans {
            println!("\nsearch_messages plan, {label} ({hits} hits), prepared, after six runs:");
            println!("{plan}");
        }
        for w in &self.warnings {
            println!("WARNING: {w}");
        }
    }

    /// The figures as JSON.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "plans": self.plans.iter().map(|(label, hits, plan)| json!({
                "query": label, "hits": hits, "plan": plan,
            })).collect::<Vec<_>>(),
            "warnings": self.warnings,
            "cases": self.cases,
        })
    }
}
