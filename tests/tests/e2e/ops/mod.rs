//! Operations: one trace across gateway and worker, graceful shutdown with work in flight,
//! a standby worker taking over a killed one (and a paused one that wakes up), several gateways
//! behaving as one (also through a rolling restart), a NATS server restart under load, the
//! shipped NATS users and permissions (`nats_auth`), and the docker compose deployment's file.

mod compose;
mod fleet;
mod load;
mod nats_auth;
mod nats_restart;
mod paused;
mod rolling;
mod scale;
mod shutdown;
pub(crate) mod standby;
mod trace;
