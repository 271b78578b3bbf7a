//! The docker compose deployment (`docker-compose.yml`, `deploy/`): the file validates with
//! Docker's own tooling (`docker compose config`, or Debian's `docker-compose`) against
//! `.env.example`, and its services are exactly those the README's deploy section lists. No
//! Docker engine is needed: nothing is built or started.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_owned()
}

/// `docker compose` (the plugin) or `docker-compose` (Debian's package), whichever works.
fn validator() -> Option<Vec<&'static str>> {
    let works = |argv: &[&str]| {
        Command::new(argv[0])
            .args(&argv[1..])
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    [vec!["docker", "compose"], vec!["docker-compose"]]
        .into_iter()
        .find(|argv| works(argv))
}

/// The top-level service names of the compose file (its `services:` keys).
fn compose_services(file: &str) -> BTreeSet<String> {
    let mut inside = false;
    let mut names = BTreeSet::new();
    for line in file.lines() {
        if !line.starts_with(' ') && !line.trim().is_empty() && !line.starts_with('#') {
            inside = line.trim_end() == "services:";
            continue;
        }
        if inside
            && let Some(name) = line.strip_prefix("  ")
            && !name.starts_with(' ')
            && !name.starts_with('#')
            && let Some(name) = name.trim_end().strip_suffix(':')
        {
            names.insert(name.to_owned());
        }
    }
    names
}

/// The services the README's "Deploy with docker compose" section lists: the first column of
/// its table rows, in backticks.
fn readme_services(readme: &str) -> BTreeSet<String> {
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Deploy with docker compose"))
        .expect("README has a \"Deploy with docker compose\" section");
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(name, _)| name.to_owned())
        .collect()
}

#[test]
fn the_compose_file_validates_and_names_every_service_of_the_readme() {
    let root = repo();
    let file = std::fs::read_to_string(root.join("docker-compose.yml")).expect("compose file");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README");
    let services = compose_services(&file);
    for wanted in [
        "nats",
        "postgres",
        "worker",
        "gateway",
        "proxy",
        "otel-collector",
        "jaeger",
    ] {
        assert!(
            services.contains(wanted),
            "compose has no {wanted}: {services:?}"
        );
    }
    assert_eq!(
        readme_services(&readme),
        services,
        "README ↔ docker-compose.yml"
    );
    for path in [
        "deploy/Dockerfile",
        "deploy/nats.conf",
        "deploy/otel-collector.yaml",
        "deploy/Caddyfile",
        "deploy/Caddyfile.tls",
        "deploy/compose.tls.yml",
        ".env.example",
    ] {
        assert!(root.join(path).is_file(), "{path} is missing");
    }

    let Some(argv) = validator() else {
        assert!(
            std::env::var_os("WAZAP_REQUIRE_COMPOSE").is_none(),
            "WAZAP_REQUIRE_COMPOSE is set but neither `docker compose` nor `docker-compose` runs"
        );
        eprintln!("note: no compose tool installed; the file was checked by name only");
        return;
    };
    let run_with = |args: &[&str], env: &[(&str, &str)]| {
        let out = Command::new(argv[0])
            .args(&argv[1..])
            .args(["--env-file", ".env.example", "-f", "docker-compose.yml"])
            .args(args)
            .envs(env.iter().copied())
            .current_dir(&root)
            .output()
            .expect("run the compose tool");
        assert!(
            out.status.success(),
            "{argv:?} {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let run = |args: &[&str]| run_with(args, &[]);
    run(&["config", "-q"]);
    // The TLS front for remote OAuth clients (docs/remote-clients.md) validates over it.
    let tls = run_with(
        &["-f", "deploy/compose.tls.yml", "config"],
        &[
            ("WAZAP_DOMAIN", "wazap.example.com"),
            ("WAZAP_OWNER_DOMAIN", "owner.wazap.example.com"),
        ],
    );
    assert!(
        tls.contains("https://owner.wazap.example.com"),
        "the TLS override sets the owner origin"
    );
    let listed: BTreeSet<String> = run(&["config", "--services"])
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(listed, services, "the compose tool sees the same services");
}
