//! Property tests of the shared crate's codecs: every wire type survives the trip through the
//! envelopes gateway and worker use (`wire`), and the hand-written codecs — the wait cursor, the
//! id and phone checks, the send checks — round-trip what they make and refuse anything else
//! without panicking (`codecs`). Strategies live in `arb*`.

#[path = "properties/arb.rs"]
mod arb;
#[path = "properties/arb_owner.rs"]
mod arb_owner;
#[path = "properties/arb_read.rs"]
mod arb_read;
#[path = "properties/arb_send.rs"]
mod arb_send;
#[path = "properties/arb_sim.rs"]
mod arb_sim;
#[path = "properties/codecs.rs"]
mod codecs;
#[path = "properties/wire.rs"]
mod wire;

use proptest::test_runner::{Config, FileFailurePersistence};

/// The tests' proptest configuration: failing seeds kept in `shared/proptest-regressions/`
/// (committed, replayed first). proptest's default looks for them beside a `lib.rs`, which an
/// integration test does not have.
fn config() -> Config {
    Config {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/properties.txt",
        ))),
        ..Config::default()
    }
}
