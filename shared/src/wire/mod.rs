//! Wire types: plain serde structs, one request/response pair per RPC, with JSON Schemas.
//!
//! Read-tool requests double as the MCP tools' input types, so their field docs are the
//! agent-facing API; responses double as the tools' structured output.

pub mod accounts;
pub mod grants;
pub mod message;
pub mod oauth;
pub mod owner;
pub mod owner_sends;
pub mod read;
pub mod search;
pub mod send;
pub mod sim;
pub mod system;
pub mod wait;

pub use message::*;
