//! Everything the gateway and the worker agree on: wire types (one request/response pair per RPC),
//! opaque ids, error codes, NATS subjects, configuration helpers and telemetry set-up.
//!
//! This crate has no HTTP, database or WhatsApp code: it sits at the bottom of the crate graph so
//! that `wazap-gateway` and `wazap-worker` can both use it without depending on each other.

pub mod bus;
pub mod checks;
pub mod config;
pub mod error;
pub mod grant;
pub mod ids;
pub mod leak;
pub mod oauth;
pub mod subjects;
pub mod telemetry;
pub mod wire;

pub use error::{ErrorCode, RpcError};
