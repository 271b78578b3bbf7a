//! Integration tests of listener A against the real NATS server at 127.0.0.1:4222 (a random
//! subject prefix per test) and a fake worker that answers like the real one.

mod auth;
mod guards;
mod support;
mod tools;
