//! The built-in sample archive the `demo` connector serves.
