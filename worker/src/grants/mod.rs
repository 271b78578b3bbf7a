//! Grants: signing keys and tokens, AI connections, and the per-request authorisation that
//! turns a verified grant into a [`crate::viewer::Viewer`].
