//! The tools `wazap-stdio` vouches for: each one's read/write annotations as DESIGN §5 fixes
//! them and how long a call may take (the gateway's deadline for the op, plus a margin so the
//! gateway's own `deadline_exceeded` answer arrives first). Names and deadlines come from
//! `wazap-shared`'s op table; the hints are written here because the adapter must not trust
//! the upstream for them — that is what it checks. The e2e compat tests run the adapter against
//! the real gateway, so this table and the gateway's `#[tool]` annotations cannot drift apart.

use std::collections::HashSet;
use std::time::Duration;

use rmcp::model::{JsonObject, Tool};
use wazap_shared::bus::Rpc;
use wazap_shared::wire::read::{ListChats, ReadMessages, SearchContacts, SearchGroups};
use wazap_shared::wire::search::{GetAttachment, SearchAttachments, SearchMessages};
use wazap_shared::wire::send::{GetSendStatus, SendMedia, SendMessage, SendVoiceNote};
use wazap_shared::wire::wait::{DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS, WaitForMessages};

/// Added to the gateway's deadline before the adapter gives up on a call.
const MARGIN: Duration = Duration::from_secs(10);

/// The four hints of a tool's annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hints {
    /// `readOnlyHint`.
    pub(crate) read_only: bool,
    /// `destructiveHint`.
    pub(crate) destructive: bool,
    /// `idempotentHint`.
    pub(crate) idempotent: bool,
    /// `openWorldHint`.
    pub(crate) open_world: bool,
}

/// A read tool: changes nothing, reads only this account's archive.
const READ: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// A send tool: writes to WhatsApp (the open world), additive, idempotent by `request_id`.
const SEND: Hints = Hints {
    read_only: false,
    destructive: false,
    idempotent: true,
    open_world: true,
};

/// `get_send_status`: reads the journal of the send tools.
const SEND_STATUS: Hints = Hints {
    read_only: true,
    ..SEND
};

/// How long a call may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deadline {
    /// The gateway's deadline for the op.
    Fixed(Duration),
    /// `wait_for_messages`: the wait the caller asked for (1–55 s, default 25).
    Wait,
}

/// One tool the adapter knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KnownTool {
    /// Its name.
    pub(crate) name: &'static str,
    /// The annotations it must announce.
    pub(crate) hints: Hints,
    /// Whether a call may hand a message to WhatsApp ([`Rpc::MAY_TRANSMIT`]): such a call
    /// cut off below MCP answers `send_outcome_unknown`.
    pub(crate) may_transmit: bool,
    deadline: Deadline,
}

impl KnownTool {
    const fn rpc<R: Rpc>(hints: Hints) -> Self {
        Self {
            name: R::OP,
            hints,
            may_transmit: R::MAY_TRANSMIT,
            deadline: Deadline::Fixed(R::DEADLINE),
        }
    }

    /// How long the adapter waits for the upstream's answer to a call with `args`.
    pub(crate) fn deadline(&self, args: Option<&JsonObject>) -> Duration {
        let base = match self.deadline {
            Deadline::Fixed(d) => d,
            Deadline::Wait => {
                let asked = args
                    .and_then(|a| a.get("timeout_seconds"))
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(u64::from(DEFAULT_TIMEOUT_SECONDS));
                Duration::from_secs(asked.clamp(1, u64::from(MAX_TIMEOUT_SECONDS)))
            }
        };
        base + MARGIN
    }
}

/// Every tool of every wazap version: 8 read tools, 4 send tools.
pub(crate) const KNOWN: [KnownTool; 12] = [
    KnownTool::rpc::<ListChats>(READ),
    KnownTool::rpc::<SearchContacts>(READ),
    KnownTool::rpc::<SearchGroups>(READ),
    KnownTool::rpc::<ReadMessages>(READ),
    KnownTool {
        name: <WaitForMessages as Rpc>::OP,
        hints: READ,
        may_transmit: false,
        deadline: Deadline::Wait,
    },
    KnownTool::rpc::<SearchMessages>(READ),
    KnownTool::rpc::<SearchAttachments>(READ),
    KnownTool::rpc::<GetAttachment>(READ),
    KnownTool::rpc::<SendMessage>(SEND),
    KnownTool::rpc::<SendMedia>(SEND),
    KnownTool::rpc::<SendVoiceNote>(SEND),
    KnownTool::rpc::<GetSendStatus>(SEND_STATUS),
];

/// The known tool named `name`.
pub(crate) fn known(name: &str) -> Option<&'static KnownTool> {
    KNOWN.iter().find(|t| t.name == name)
}

/// Why the adapter refuses an upstream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A known tool announces other annotations than wazap gives it.
    #[error(
        "the server announces tool `{tool}` with {hint} = {announced}, but wazap's `{tool}` has \
         {hint} = {expected}; refusing this server (it is not wazap, or not a version this \
         wazap-stdio knows)"
    )]
    Disagrees {
        /// The tool.
        tool: String,
        /// The annotation's wire name.
        hint: &'static str,
        /// What wazap's tool announces.
        expected: bool,
        /// What the server announced (`missing` when absent).
        announced: String,
    },
    /// A tool name is listed twice.
    #[error("the server lists tool `{0}` twice; refusing this server")]
    Duplicate(String),
    /// None of the listed tools is a wazap tool.
    #[error("the server offers none of wazap's tools; is WAZAP_URL the wazap /mcp URL?")]
    NoKnownTools,
}

/// The outcome of a successful check.
#[derive(Debug, Clone, Default)]
pub(crate) struct Checked {
    /// The known tools, as the upstream announced them, in its order.
    pub(crate) tools: Vec<Tool>,
    /// Names the adapter does not know; they are not forwarded.
    pub(crate) unknown: Vec<String>,
}

/// Check an upstream's tool list. Any subset of the known tools is accepted (older versions
/// and deployments with `WAZAP_OUTBOUND=off` or `WAZAP_ATTACHMENTS=off` list fewer), as long as
/// every known tool listed announces exactly its four hints.
pub(crate) fn check(listed: Vec<Tool>) -> Result<Checked, Refusal> {
    let mut seen = HashSet::new();
    let mut checked = Checked::default();
    for tool in listed {
        if !seen.insert(tool.name.to_string()) {
            return Err(Refusal::Duplicate(tool.name.to_string()));
        }
        let Some(expected) = known(&tool.name) else {
            checked.unknown.push(tool.name.to_string());
            continue;
        };
        compare(&tool, expected)?;
        checked.tools.push(tool);
    }
    if checked.tools.is_empty() {
        return Err(Refusal::NoKnownTools);
    }
    Ok(checked)
}

fn compare(tool: &Tool, expected: &KnownTool) -> Result<(), Refusal> {
    let a = tool.annotations.as_ref();
    let want = expected.hints;
    let pairs = [
        (
            "readOnlyHint",
            want.read_only,
            a.and_then(|a| a.read_only_hint),
        ),
        (
            "destructiveHint",
            want.destructive,
            a.and_then(|a| a.destructive_hint),
        ),
        (
            "idempotentHint",
            want.idempotent,
            a.and_then(|a| a.idempotent_hint),
        ),
        (
            "openWorldHint",
            want.open_world,
            a.and_then(|a| a.open_world_hint),
        ),
    ];
    for (hint, expected_value, announced) in pairs {
        if announced != Some(expected_value) {
            return Err(Refusal::Disagrees {
                tool: tool.name.to_string(),
                hint,
                expected: expected_value,
                announced: announced.map_or_else(|| "missing".to_owned(), |v| v.to_string()),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmcp::model::ToolAnnotations;

    use super::*;

    fn tool(name: &str, h: Hints) -> Tool {
        Tool::new(name.to_owned(), "d", Arc::new(JsonObject::new())).with_annotations(
            ToolAnnotations::new()
                .read_only(h.read_only)
                .destructive(h.destructive)
                .idempotent(h.idempotent)
                .open_world(h.open_world),
        )
    }

    fn all() -> Vec<Tool> {
        KNOWN.iter().map(|k| tool(k.name, k.hints)).collect()
    }

    #[test]
    fn the_table_has_8_read_and_4_send_tools() {
        let read_only: Vec<_> = KNOWN.iter().filter(|k| k.hints.read_only).collect();
        assert_eq!(read_only.len(), 9, "8 read tools and get_send_status");
        let writes: Vec<_> = KNOWN
            .iter()
            .filter(|k| !k.hints.read_only)
            .map(|k| k.name)
            .collect();
        assert_eq!(writes, ["send_message", "send_media", "send_voice_note"]);
        assert_eq!(
            known("send_message").unwrap().deadline(None),
            Duration::from_secs(70)
        );
        assert_eq!(
            known("list_chats").unwrap().deadline(None),
            Duration::from_secs(25)
        );
    }

    #[test]
    fn every_deployment_and_earlier_set_is_accepted() {
        assert_eq!(check(all()).unwrap().tools.len(), 12);
        let read_only: Vec<Tool> = all().into_iter().take(8).collect();
        assert_eq!(check(read_only).unwrap().tools.len(), 8);
        let no_attachments: Vec<Tool> = all()
            .into_iter()
            .filter(|t| !t.name.contains("attachment"))
            .collect();
        assert_eq!(check(no_attachments).unwrap().tools.len(), 10);
        let first_version: Vec<Tool> = all().into_iter().take(4).collect();
        assert_eq!(check(first_version).unwrap().tools.len(), 4);
    }

    #[test]
    fn a_send_tool_announced_read_only_is_refused() {
        let mut tools = all();
        tools[8] = tool("send_message", READ);
        let e = check(tools).unwrap_err();
        assert_eq!(
            e,
            Refusal::Disagrees {
                tool: "send_message".into(),
                hint: "readOnlyHint",
                expected: false,
                announced: "true".into(),
            }
        );
        assert!(e.to_string().contains("send_message"));
    }

    #[test]
    fn missing_annotations_duplicates_and_strangers_are_handled() {
        let mut tools = all();
        tools[0] = Tool::new("list_chats", "d", Arc::new(JsonObject::new()));
        assert!(matches!(
            check(tools),
            Err(Refusal::Disagrees { ref announced, .. }) if announced == "missing"
        ));
        let mut tools = all();
        tools.push(tool("list_chats", READ));
        assert_eq!(
            check(tools).unwrap_err(),
            Refusal::Duplicate("list_chats".into())
        );
        let mut tools = all();
        tools.push(tool("delete_everything", READ));
        let checked = check(tools).unwrap();
        assert_eq!(checked.tools.len(), 12);
        assert_eq!(checked.unknown, ["delete_everything"]);
        assert_eq!(
            check(vec![tool("x", READ)]).unwrap_err(),
            Refusal::NoKnownTools
        );
    }

    #[test]
    fn a_wait_lasts_as_long_as_asked_plus_the_margin() {
        let wait = known("wait_for_messages").unwrap();
        let args = |v: serde_json::Value| v.as_object().unwrap().clone();
        assert_eq!(wait.deadline(None), Duration::from_secs(35));
        let a = args(serde_json::json!({"timeout_seconds": 55}));
        assert_eq!(wait.deadline(Some(&a)), Duration::from_secs(65));
        let a = args(serde_json::json!({"timeout_seconds": 5000}));
        assert_eq!(wait.deadline(Some(&a)), Duration::from_secs(65));
    }
}
