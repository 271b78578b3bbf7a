//! The `sim` connector: a deterministic test peer driven over NATS `<prefix>.sim.<op>`.
