//! `wazap-stdio`: configuration (environment or config file, never arguments) → logs on stderr
//! → check the upstream's tools → serve MCP on stdin/stdout until the client closes them.

use std::process::ExitCode;

use wazap_shared::config::Env;

/// `EX_USAGE`: arguments were given.
const EXIT_USAGE: u8 = 64;

const USAGE: &str = "usage: wazap-stdio (no arguments)
An MCP server on stdin/stdout that forwards to a wazap server.
  WAZAP_URL           the server's MCP URL, e.g. http://127.0.0.1:8080/mcp
  WAZAP_TOKEN         the AI connection's bearer token
  WAZAP_STDIO_CONFIG  a file of WAZAP_URL=… and WAZAP_TOKEN=… lines
                      (default: $XDG_CONFIG_HOME/wazap/stdio.env or ~/.config/wazap/stdio.env)
The token is never taken from arguments: other users can read those in the process list.";

#[tokio::main]
async fn main() -> ExitCode {
    if std::env::args_os().len() > 1 {
        eprintln!("{USAGE}");
        return ExitCode::from(EXIT_USAGE);
    }
    wazap_shared::telemetry::init("wazap-stdio");
    // https upstreams: rustls on ring (the HTTP client is built without a default provider).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let outcome = match wazap_stdio::Config::load(&Env) {
        Ok(config) => wazap_stdio::run(config).await,
        Err(e) => Err(e.into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wazap-stdio: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
