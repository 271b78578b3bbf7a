//! The wazap worker: the single authority. It owns the WhatsApp connection (a [`connector`]),
//! the Postgres archive ([`archive`]), grants and scopes ([`grants`]), and answers the gateways'
//! requests on NATS ([`rpc`], the RPC edge).
//!
//! Layout: `server` wires everything and runs until shutdown; `rpc/<op>.rs` is one RPC each
//! (edge) → `archive` / `grants` (domain and store). Nothing here depends on the gateway.

pub mod accounts;
pub mod archive;
pub mod cli;
pub mod config;
pub mod connector;
pub mod db;
pub mod error;
pub mod fleet;
#[doc(hidden)]
pub mod fuzzing;
pub mod grants;
pub mod lease;
pub mod memo;
pub mod metrics;
pub mod oauth;
pub mod owner;
pub mod rpc;
pub mod send;
pub mod server;
pub mod shutdown;
pub mod state;
pub mod supervise;
pub mod viewer;

pub use config::Config;
pub use server::run;
