//! Small readers and builders for binary nodes, so the server's code reads like the stanzas.

use whatsapp_rust::Jid;
use whatsapp_rust::wacore_binary::{Node, NodeContent};

/// The server's JID as clients expect it in `from`.
pub(crate) const SERVER: &str = "s.whatsapp.net";

/// An attribute as text.
pub(crate) fn attr(node: &Node, key: &str) -> Option<String> {
    node.attrs.get(key).map(|v| v.as_str().into_owned())
}

/// An attribute as a JID.
pub(crate) fn jid(node: &Node, key: &str) -> Option<Jid> {
    node.attrs.get(key).and_then(|v| v.to_jid())
}

/// The children, or none.
pub(crate) fn children(node: &Node) -> &[Node] {
    node.children().unwrap_or(&[])
}

/// The first child named `tag`.
pub(crate) fn child<'a>(node: &'a Node, tag: &str) -> Option<&'a Node> {
    node.get_optional_child(tag)
}

/// The node's bytes (binary or string content).
pub(crate) fn bytes(node: &Node) -> Option<&[u8]> {
    match node.content.as_ref()? {
        NodeContent::Bytes(b) => Some(b),
        NodeContent::String(s) => Some(s.as_bytes()),
        NodeContent::Nodes(_) => None,
    }
}

/// The bytes of the child named `tag`.
pub(crate) fn child_bytes<'a>(node: &'a Node, tag: &str) -> Option<&'a [u8]> {
    child(node, tag).and_then(bytes)
}

/// The server's answer to an IQ: `result` with `children`.
pub(crate) fn result(iq: &Node, children: Vec<Node>) -> Node {
    let mut b = whatsapp_rust::NodeBuilder::new("iq")
        .attr("from", attr(iq, "to").unwrap_or_else(|| SERVER.to_owned()))
        .attr("type", "result")
        .attr("id", attr(iq, "id").unwrap_or_default());
    if !children.is_empty() {
        b = b.children(children);
    }
    b.build()
}

/// The server's error answer to an IQ.
pub(crate) fn error(iq: &Node, code: u16, text: &str) -> Node {
    whatsapp_rust::NodeBuilder::new("iq")
        .attr("from", attr(iq, "to").unwrap_or_else(|| SERVER.to_owned()))
        .attr("type", "error")
        .attr("id", attr(iq, "id").unwrap_or_default())
        .children([whatsapp_rust::NodeBuilder::new("error")
            .attr("code", code.to_string())
            .attr("text", text)
            .build()])
        .build()
}

/// Now, in Unix seconds.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
