//! The `wazap-worker` command line: serve, migrate, and connection management.
