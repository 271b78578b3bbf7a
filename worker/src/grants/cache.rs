//! The viewer each connection had at its last accepted request, so a read-only request can run
//! its handler *while* Postgres re-checks the grant instead of after (one round trip off every
//! read; DESIGN §11). Nothing is ever answered from memory alone: the fresh check decides, and
//! when it disagrees with what was remembered the answer is thrown away (see
//! `handlers::granted_read`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::viewer::Viewer;

/// Most connections remembered (a deployment has a handful; this only bounds memory).
const MAX_ENTRIES: usize = 1_024;

/// Shared between requests; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct GrantCache {
    entries: Arc<Mutex<HashMap<String, Arc<Viewer>>>>,
}

impl GrantCache {
    /// The viewer `connection_id` had at its last accepted request.
    pub fn get(&self, connection_id: &str) -> Option<Arc<Viewer>> {
        self.lock().get(connection_id).cloned()
    }

    /// Remember the viewer of an accepted request.
    pub fn put(&self, viewer: &Viewer) {
        let mut entries = self.lock();
        if entries
            .get(&viewer.connection_id)
            .is_some_and(|v| **v == *viewer)
        {
            return;
        }
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(viewer.connection_id.clone(), Arc::new(viewer.clone()));
    }

    /// Forget a connection whose grant was refused.
    pub fn forget(&self, connection_id: &str) {
        self.lock().remove(connection_id);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Viewer>>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wazap_shared::wire::grants::{ReadScope, SendMode, SendPermission};

    fn viewer(revision: u32) -> Viewer {
        Viewer {
            connection_id: "conn_1".into(),
            scope: ReadScope::all(),
            send: SendPermission {
                mode: SendMode::None,
                chats: Vec::new(),
                revision,
            },
            excluded_chats: Vec::new(),
        }
    }

    #[test]
    fn remembers_the_latest_accepted_viewer_until_forgotten() {
        let cache = GrantCache::default();
        assert!(cache.get("conn_1").is_none());
        cache.put(&viewer(1));
        cache.put(&viewer(2));
        assert_eq!(cache.get("conn_1").as_deref(), Some(&viewer(2)));
        cache.forget("conn_1");
        assert!(cache.get("conn_1").is_none());
    }
}
