//! Operations: one trace across gateway and worker, graceful shutdown with work in flight,
//! a standby worker taking over a killed one, several gateways behaving as one, and the docker compose deployment's file.

mod compose;
mod scale;
mod shutdown;
mod standby;
mod trace;
