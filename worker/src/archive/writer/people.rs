//! The writer's identity ops beside message ingest: a contact (and its LID link, which may merge
//! two chats), a group, and the account's own JIDs — each in a transaction of its own, the
//! writer's caches kept in step or dropped when it fails.

use super::{Writer, chats};
use crate::archive::model::{ContactUpdate, GroupUpdate};

impl Writer {
    /// Add or update a contact (linking its LID, which may merge two chats).
    pub(super) async fn contact(
        &mut self,
        account: &str,
        update: &ContactUpdate,
    ) -> anyhow::Result<String> {
        let r = self.contact_tx(account, update).await;
        self.forgetting(r)
    }

    async fn contact_tx(
        &mut self,
        account: &str,
        update: &ContactUpdate,
    ) -> anyhow::Result<String> {
        let pool = self.pool.clone();
        let mut client = pool.get().await?;
        let tx = client.transaction().await?;
        self.account(&tx, account).await?;
        let merged = &mut self.accounts.get_mut(account).expect("loaded above").merged;
        let chat =
            chats::upsert_contact(&tx, &self.key, &mut self.cache, merged, account, update).await?;
        tx.commit().await?;
        self.repoint_pending(account);
        Ok(chat)
    }

    /// After a commit that may have merged chats: history deltas still pending for a chat
    /// merged away belong to the chat that absorbed it (the other row is gone).
    pub(super) fn repoint_pending(&mut self, account: &str) {
        if let Some(state) = self.accounts.get(account) {
            self.pending.repoint(account, &state.merged);
        }
    }

    /// Add or update a group.
    pub(super) async fn group(
        &mut self,
        account: &str,
        update: &GroupUpdate,
    ) -> anyhow::Result<String> {
        let r = async {
            let pool = self.pool.clone();
            let mut client = pool.get().await?;
            let tx = client.transaction().await?;
            self.account(&tx, account).await?;
            let chat =
                chats::upsert_group(&tx, &self.key, &mut self.cache, account, update).await?;
            tx.commit().await?;
            Ok(chat)
        }
        .await;
        self.forgetting(r)
    }

    /// Record the account's own JID and/or LID.
    pub(super) async fn set_own(
        &mut self,
        account: &str,
        jid: Option<&str>,
        lid: Option<&str>,
    ) -> anyhow::Result<()> {
        let pool = self.pool.clone();
        let mut client = pool.get().await?;
        let tx = client.transaction().await?;
        self.account(&tx, account).await?;
        let own = chats::set_own(&tx, account, jid, lid).await?;
        tx.commit().await?;
        if let Some(a) = self.accounts.get_mut(account) {
            a.own = own;
        }
        Ok(())
    }
}
