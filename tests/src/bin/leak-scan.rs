//! `leak-scan <capture directory>`: the leak scan `scripts/test` runs after the tests (see
//! `wazap_tests::leak_scan`).

fn main() -> std::process::ExitCode {
    wazap_tests::leak_scan::main()
}
