//! What each connection's grant was at its last accepted request, so a request can do its work
//! *while* Postgres re-checks the grant instead of after (one round trip off every read and
//! send; DESIGN §11). Nothing is ever answered from memory alone: a read's fresh check decides
//! and throws a guess away when it disagrees (`rpc::granted_read`); a send's reservation
//! commits only if [`super::authorize::grant_guard`] finds the same grant (`send::fast`).

use std::sync::Arc;

use super::authorize::Authorized;
use crate::memo::Memo;

/// Most connections remembered (a deployment has a handful; this only bounds memory).
const MAX_ENTRIES: usize = 1_024;

/// Shared between requests; cheap to clone.
#[derive(Debug, Clone)]
pub struct GrantCache(Memo<Authorized>);

impl Default for GrantCache {
    fn default() -> Self {
        Self(Memo::new(MAX_ENTRIES))
    }
}

impl GrantCache {
    /// The grant `connection_id` had at its last accepted request.
    pub fn get(&self, connection_id: &str) -> Option<Arc<Authorized>> {
        self.0.get(connection_id)
    }

    /// Remember an accepted grant (no copy when it is the one remembered: the usual case, on
    /// every request).
    pub fn put(&self, accepted: &Authorized) {
        let id = &accepted.viewer.connection_id;
        if self.0.get(id).is_none_or(|a| *a != *accepted) {
            self.0.put(id, accepted);
        }
    }

    /// Forget a connection whose grant was refused or has changed.
    pub fn forget(&self, connection_id: &str) {
        self.0.forget(connection_id);
    }
}
