//! The `wazap-stdio` executable before it serves: arguments, configuration and an unreachable
//! server end it with their exit codes, a message on stderr and nothing on stdout (stdout is the
//! protocol's). The adapter against an upstream is in the e2e compat tests, which run this
//! binary.

use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Run the binary with only `vars` in its environment, bounded by 30 s.
fn run(args: &[&str], vars: &[(&str, &str)]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_wazap-stdio"))
        .args(args)
        .env_clear()
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start wazap-stdio");
    let (done, outcome) = mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    outcome
        .recv_timeout(Duration::from_secs(30))
        .expect("wazap-stdio did not exit in time")
        .expect("wait for wazap-stdio")
}

#[test]
fn arguments_are_refused_with_the_usage() {
    let out = run(&["--token", "secret"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{err}");
    assert!(err.contains("usage: wazap-stdio"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_missing_token_is_a_configuration_error() {
    let out = run(&[], &[("WAZAP_URL", "http://127.0.0.1:1/mcp")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(78), "{err}");
    assert!(err.contains("WAZAP_TOKEN is not set"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn an_unreachable_server_is_unavailable_and_the_token_stays_out_of_the_logs() {
    let token = "tok-never-in-the-logs";
    let out = run(
        &[],
        &[
            ("WAZAP_URL", "http://127.0.0.1:1/mcp"),
            ("WAZAP_TOKEN", token),
            ("RUST_LOG", "debug"),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(69), "{err}");
    assert!(err.contains("cannot reach the wazap server"), "{err}");
    assert!(!err.contains(token), "{err}");
    assert!(out.stdout.is_empty());
}
