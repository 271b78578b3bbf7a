//! The `demo` connector: seeds the built-in sample archive once and reports `demo`; cannot send.
