//! `wazap-worker`: parse the command line, read the configuration, start logging, run.

use std::process::ExitCode;

use wazap_shared::config::Env;
use wazap_worker::Config;
use wazap_worker::cli::{self, Command};

/// mimalloc: glibc's malloc was a large share of the CPU on reads (figures: bench/README.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let args = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned());
    let command = match cli::parse(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("wazap-worker: {e}");
            return ExitCode::from(cli::EXIT_USAGE);
        }
    };
    if command == Command::Help {
        print!("{}", cli::USAGE);
        return ExitCode::SUCCESS;
    }
    let config = match Config::from_source(&Env) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("wazap-worker: {e}");
            return ExitCode::from(cli::EXIT_USAGE);
        }
    };
    wazap_shared::telemetry::init("wazap-worker");
    let code = cli::run::execute(command, config).await;
    // Spans and metrics still buffered go out before the process ends.
    wazap_shared::telemetry::shutdown();
    code
}
