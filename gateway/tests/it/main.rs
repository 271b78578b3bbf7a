//! Integration tests of the MCP listener against a real NATS server (`WAZAP_TEST_NATS_URL`, default
//! 127.0.0.1:4222; the send tests need JetStream; a random subject prefix per test) and a fake
//! worker that answers like the real one.

mod auth;
mod guards;
mod malformed_media;
mod media_store;
mod oauth;
mod oauth_support;
mod send;
mod send_api;
mod send_leak;
mod send_support;
mod support;
mod tools;
