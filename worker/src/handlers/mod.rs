//! The RPC edge: one module per op on `<prefix>.rpc.<op>`.
