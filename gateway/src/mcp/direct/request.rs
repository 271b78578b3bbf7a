//! Which `/mcp` requests the direct route takes: only those whose every check rmcp's stateless
//! Streamable HTTP service and its `ServerHandler` (rmcp 3.11) would pass without a second look,
//! so that the answer can be rmcp's exactly. Anything else (`None`) goes to rmcp, which stays
//! the authority on every error of the protocol.
//!
//! Two kinds of call qualify:
//! - **legacy** (protocol before 2026-07-28): `MCP-Protocol-Version` absent or one known older
//!   version, and no `_meta` in the body — rmcp checks nothing more;
//! - **standard** (2026-07-28, what rmcp's own client sends): the version header exactly
//!   `2026-07-28`, one `Mcp-Method: tools/call`, one `Mcp-Name` equal to the tool's name
//!   (SEP-2243; tools with `x-mcp-header` parameters are never direct, see
//!   [`crate::mcp::ToolSet`]), and a `_meta` holding only the keys rmcp's client sends, whose
//!   `protocolVersion` is that same version (header = `_meta`), with valid `clientCapabilities`
//!   (rmcp's own `missing_required_keys`), in a version the server supports.
//!
//! Both need `Accept` listing `application/json` and `text/event-stream` as plain entries,
//! `Content-Type: application/json`, no session id, and a body that is one request with exactly
//! `jsonrpc: "2.0"`, `id`, `method: "tools/call"` and `params: {name, arguments[, _meta]}`
//! (no batch, no task, `arguments` an object) naming a tool this deployment serves.

use http::{HeaderMap, header};
use rmcp::model::{JsonObject, ProtocolVersion, RequestId, RequestMetaObject};
use serde::{Deserialize, Deserializer};

use super::arguments::Arguments;
use crate::mcp::DirectTool;
use crate::media::{Place, locate};

/// Which rules the answer follows: rmcp shapes results for older peers differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Peer {
    /// A protocol version before 2026-07-28.
    Legacy,
    /// Protocol 2026-07-28, with its headers and `_meta`.
    Standard,
}

/// The `_meta` keys rmcp's client sends on a 2026-07-28 request. rmcp reads nothing else of
/// them on a tool call; a request with any other key goes to rmcp all the same.
const META_KEYS: [&str; 4] = [
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
    "progressToken",
];

/// A request the direct route answers.
#[derive(Debug)]
pub(super) struct DirectCall {
    /// The JSON-RPC id, echoed in the answer.
    pub(super) id: RequestId,
    /// The tool called.
    pub(super) tool: DirectTool,
    /// Its arguments; for a tool that takes its base64 from the body, `data_base64` is an
    /// empty string there and its value is [`Self::data`].
    pub(super) arguments: JsonObject,
    /// Where a media tool's `data_base64` string is in the body ([`super::arguments`]).
    pub(super) data: Option<Place>,
    /// Which answer rules apply.
    pub(super) peer: Peer,
}

/// What the headers allow, before the body is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HeaderRoute<'a> {
    /// A legacy call (body without `_meta`).
    Legacy,
    /// A 2026-07-28 call of the tool named in `Mcp-Name`.
    Standard { name: &'a str },
}

/// The route the headers of a POST allow, or `None` when rmcp must answer.
pub(super) fn header_route(headers: &HeaderMap) -> Option<HeaderRoute<'_>> {
    if !accepts_json_and_sse(headers)
        || !json_content(headers)
        || headers.contains_key("mcp-session-id")
    {
        return None;
    }
    let mut versions = headers.get_all("mcp-protocol-version").iter();
    let Some(version) = versions.next() else {
        // rmcp takes an absent header for 2025-03-26.
        return Some(HeaderRoute::Legacy);
    };
    if versions.next().is_some() {
        return None;
    }
    let version = version.to_str().ok()?;
    if version == ProtocolVersion::V_2026_07_28.as_str() {
        if single(headers, "mcp-method")? != "tools/call" {
            return None;
        }
        return Some(HeaderRoute::Standard {
            name: single(headers, "mcp-name")?,
        });
    }
    let known_older = version < ProtocolVersion::STANDARD_HEADERS.as_str()
        && ProtocolVersion::KNOWN_VERSIONS
            .iter()
            .any(|known| known.as_str() == version);
    known_older.then_some(HeaderRoute::Legacy)
}

/// The one textual value of header `name` (rmcp refuses duplicates and non-text values).
fn single<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    match values.next() {
        Some(_) => None,
        None => value.to_str().ok(),
    }
}

/// `Accept` lists both types as plain entries (no quoting, no parameters such as `q=0`, which
/// rmcp weighs: those requests are rmcp's).
fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        if value.contains('"') {
            return false;
        }
        for entry in value.split(',').map(str::trim) {
            json |= entry.eq_ignore_ascii_case("application/json");
            sse |= entry.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

/// `Content-Type` is `application/json` (parameters allowed, as rmcp allows them).
fn json_content(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// `_meta`: absent, or an object (`null` or another type fails the parse: rmcp's call).
#[derive(Debug, Default)]
struct Meta(Option<JsonObject>);

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        JsonObject::deserialize(deserializer).map(|m| Self(Some(m)))
    }
}

impl DirectCall {
    /// The call in `body` under the headers' `route`, if the direct route answers it: `tools`
    /// finds an enabled tool by name, `supported` are the server's protocol versions.
    pub(super) fn parse(
        route: HeaderRoute<'_>,
        body: &[u8],
        tools: impl Fn(&str) -> Option<DirectTool>,
        supported: &[ProtocolVersion],
    ) -> Option<Self> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Envelope<'a> {
            #[serde(borrow)]
            jsonrpc: &'a str,
            id: RequestId,
            #[serde(borrow)]
            method: &'a str,
            #[serde(borrow)]
            params: Params<'a>,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Params<'a> {
            #[serde(borrow)]
            name: &'a str,
            #[serde(borrow)]
            arguments: Arguments<'a>,
            #[serde(rename = "_meta", default)]
            meta: Meta,
        }
        let e: Envelope<'_> = serde_json::from_slice(body).ok()?;
        if e.jsonrpc != "2.0" || e.method != "tools/call" {
            return None;
        }
        let peer = match (route, e.params.meta.0) {
            (HeaderRoute::Legacy, None) => Peer::Legacy,
            (HeaderRoute::Standard { name }, Some(meta)) => {
                if name != e.params.name || !standard_meta(meta, supported) {
                    return None;
                }
                Peer::Standard
            }
            _ => return None,
        };
        let tool = tools(e.params.name)?;
        let (arguments, data) = if tool.takes_base64() {
            let Arguments { object, data } = e.params.arguments;
            (object, data.map(|data| locate(body, data)))
        } else {
            (e.params.arguments.into_object(), None)
        };
        Some(Self {
            id: e.id,
            tool,
            arguments,
            data,
            peer,
        })
    }
}

/// A 2026-07-28 `_meta` that passes rmcp's checks: only [`META_KEYS`], the protocol version
/// the header names, which the server supports, and the keys that version requires.
fn standard_meta(meta: JsonObject, supported: &[ProtocolVersion]) -> bool {
    if !meta.keys().all(|k| META_KEYS.contains(&k.as_str())) {
        return false;
    }
    let meta = RequestMetaObject::from(meta);
    let version = ProtocolVersion::V_2026_07_28;
    meta.protocol_version().as_ref() == Some(&version)
        && supported.contains(&version)
        && meta.missing_required_keys(&version).is_empty()
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
