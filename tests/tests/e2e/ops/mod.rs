//! Operations: one trace across gateway and worker, graceful shutdown with work in flight,
//! a standby worker taking over a killed one, several gateways behaving as one (also through a
//! rolling restart), and the docker compose deployment's file.

mod compose;
mod rolling;
mod scale;
mod shutdown;
pub(crate) mod standby;
mod trace;
