//! The fault harness (#25 item 6): real services made to fail on purpose — a throwaway
//! Postgres cluster a test may crash and start again ([`pg::PgCluster`]), a throwaway
//! nats-server it may kill and start again ([`nats::NatsServer`]), a three-node NATS cluster
//! it may kill one node of ([`cluster::NatsCluster`]), and a TCP proxy that
//! delays, stalls or resets a link ([`proxy::Proxy`]). Worker processes to SIGKILL are this
//! test binary re-run (see `tests/e2e/ops/standby.rs`).

pub mod cluster;
pub mod nats;
pub mod pg;
pub mod proxy;

pub use cluster::NatsCluster;
pub use nats::NatsServer;
pub use pg::PgCluster;
pub use proxy::{Mode, Proxy};
