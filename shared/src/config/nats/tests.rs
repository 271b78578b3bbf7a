//! `NatsConfig::from_source`: what each variable gives, and one line naming the variable (never
//! its value) for each bad one.

use std::collections::HashMap;

use super::*;

fn from(pairs: &[(&'static str, &str)]) -> Result<NatsConfig, ConfigError> {
    let map: HashMap<&str, &str> = pairs.iter().copied().collect();
    NatsConfig::from_source(&map)
}

const SEED: &str = "SUAIO3FHUX5PNV2LQIIP7TZ3N4L7TX3W53MQGEIVYFIGA635OZCKEYHFLM";

#[test]
fn nothing_set_is_an_anonymous_plain_connection() {
    let c = from(&[]).unwrap();
    assert_eq!(c, NatsConfig::plain(super::super::DEFAULT_NATS_URL));
    assert!(!c.is_authenticated());
}

#[test]
fn each_kind_of_credentials_is_read_and_never_shown() {
    let c = from(&[(NATS_USER, " gateway "), (NATS_PASSWORD, "hunter2-secret")]).unwrap();
    assert!(c.is_authenticated());
    assert!(matches!(&c.auth, NatsAuth::UserPassword { user, password }
        if user == "gateway" && password.expose() == "hunter2-secret"));
    let c2 = from(&[(NATS_TOKEN, "tok-secret")]).unwrap();
    assert_eq!(c2.auth, NatsAuth::Token(Secret::new("tok-secret")));
    let c3 = from(&[(NATS_NKEY_SEED, SEED)]).unwrap();
    assert_eq!(c3.auth, NatsAuth::NKey(Secret::new(SEED)));
    for c in [c, c2, c3] {
        let shown = format!("{c:?}");
        for secret in ["hunter2-secret", "tok-secret", SEED] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(c.is_authenticated());
    }
}

#[test]
fn every_server_of_a_list_is_given_to_the_client_and_replicas_are_read() {
    let c = from(&[
        (
            crate::config::NATS_URL,
            "nats://10.0.0.1:4222, 10.0.0.2:4223 ,tls://n3.example:4224",
        ),
        (NATS_REPLICAS, " 3 "),
    ])
    .unwrap();
    let servers: Vec<String> = c
        .servers()
        .unwrap()
        .into_iter()
        .map(|s| s.into_inner().to_string())
        .collect();
    assert_eq!(
        servers,
        [
            "nats://10.0.0.1:4222",
            "nats://10.0.0.2:4223",
            "tls://n3.example:4224"
        ]
    );
    assert_eq!(c.replicas, 3);
    assert!(c.tls.required, "a tls:// server turns TLS on");
    assert_eq!(from(&[(NATS_REPLICAS, "5")]).unwrap().replicas, 5);
    assert_eq!(from(&[]).unwrap().replicas, 1);
}

#[test]
fn files_must_be_readable_and_turn_tls_on() {
    let dir = std::env::temp_dir().join(format!("wazap-nats-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pem = dir.join("ca.pem");
    std::fs::write(&pem, "x").unwrap();
    let pem_s = pem.to_str().unwrap();
    let c = from(&[(NATS_TLS_CA_FILE, pem_s)]).unwrap();
    assert_eq!(c.tls.ca_file.as_deref(), Some(pem.as_path()));
    assert!(c.tls.required);
    let c = from(&[(NATS_TLS_CERT_FILE, pem_s), (NATS_TLS_KEY_FILE, pem_s)]).unwrap();
    assert!(c.tls.client_cert.is_some() && c.tls.required);
    let c = from(&[(NATS_CREDS_FILE, pem_s)]).unwrap();
    assert_eq!(c.auth, NatsAuth::CredsFile(pem.clone()));
    assert!(
        from(&[(crate::config::NATS_URL, "tls://n:4222")])
            .unwrap()
            .tls
            .required
    );
    assert!(from(&[(NATS_TLS_REQUIRED, "on")]).unwrap().tls.required);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_values_name_the_variable_never_the_value() {
    let missing = "/nonexistent/wazap-secret-path";
    for (pairs, var) in [
        (vec![(NATS_USER, "gateway")], NATS_PASSWORD),
        (vec![(NATS_PASSWORD, "pw-secret")], NATS_USER),
        (
            vec![(NATS_USER, "a b"), (NATS_PASSWORD, "pw-secret")],
            NATS_USER,
        ),
        (vec![(NATS_NKEY_SEED, "not-a-seed-secret")], NATS_NKEY_SEED),
        (
            vec![
                (NATS_USER, "u"),
                (NATS_PASSWORD, "pw-secret"),
                (NATS_TOKEN, "tok-secret"),
            ],
            NATS_TOKEN,
        ),
        (vec![(NATS_CREDS_FILE, missing)], NATS_CREDS_FILE),
        (vec![(NATS_TLS_CA_FILE, missing)], NATS_TLS_CA_FILE),
        (vec![(NATS_TLS_CERT_FILE, missing)], NATS_TLS_CERT_FILE),
        (vec![(NATS_TLS_REQUIRED, "maybe")], NATS_TLS_REQUIRED),
        (
            vec![
                (NATS_TLS_REQUIRED, "off"),
                (crate::config::NATS_URL, "tls://n:1"),
            ],
            NATS_TLS_REQUIRED,
        ),
        (
            vec![(crate::config::NATS_URL, "nats://u:pw-secret@n:4222")],
            crate::config::NATS_URL,
        ),
        (
            vec![(crate::config::NATS_URL, "nats://n1:4222,nats://n2:99999")],
            crate::config::NATS_URL,
        ),
        (
            vec![(crate::config::NATS_URL, "nats://n1:4222,,nats://n2:4222")],
            crate::config::NATS_URL,
        ),
        (vec![(NATS_REPLICAS, "0")], NATS_REPLICAS),
        (vec![(NATS_REPLICAS, "6")], NATS_REPLICAS),
        (vec![(NATS_REPLICAS, "three")], NATS_REPLICAS),
        (vec![(NATS_REPLICAS, "-1")], NATS_REPLICAS),
    ] {
        let e = from(&pairs).unwrap_err();
        assert_eq!(e.var, var, "{pairs:?}");
        let line = e.to_string();
        for secret in ["pw-secret", "tok-secret", "not-a-seed-secret", missing] {
            assert!(!line.contains(secret), "{line}");
        }
    }
}
