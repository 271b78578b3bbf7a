//! The one-statement reservation (DESIGN §11's send budget): a text from a connection whose
//! grant, to a chat whose target, the worker saw Postgres accept at an earlier request is
//! decided in memory on what was remembered, and reserved by one statement that also checks,
//! in Postgres, that both still hold — the journal's reservation with a grant guard and a chat
//! guard ([`journal::reserve_sql`]). A revoked, rotated or expired credential, a local
//! connection used from elsewhere, an edited read scope, send permission or archive policy, or
//! a chat that moved each fail a guard, which fails the statement: nothing is reserved, both
//! memories are dropped, and the send goes the ordinary way (grant check + chat lookup, then
//! the reservation), which decides and answers from fresh reads. So does a guess that fails in
//! memory (not permitted, not connected): every refusal is answered from fresh reads. Media
//! sends always go the ordinary way: they look their key up before reading their bytes.

use std::sync::{Arc, LazyLock};

use deadpool_postgres::GenericClient as _;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use wazap_shared::grant::VerifiedGrant;

use super::gates::{self, LookedUpChat, Target, chat_guard};
use super::journal::{self, Reserved, reserve_sql};
use super::{CONTEXT, NewSend, Plan, Sender};
use crate::error::{Context as _, Error};
use crate::grants::authorize::{Authorized, grant_guard};

/// The reservation with its guards: `$12`–`$14` the grant's revision, loopback and remembered
/// row digest (with the connection `$1`); `$15`, `$16` the chat id asked for and the default
/// account (with the remembered account `$4`, chat `$5` and JID `$7`).
static GUARDED_RESERVE: LazyLock<String> = LazyLock::new(|| {
    reserve_sql(&[
        grant_guard("$1", "$12", "$13", "$14"),
        chat_guard("$15", "$16", "$4", "$5", "$7"),
    ])
});

/// A send decided on remembered facts, waiting for Postgres to confirm them.
pub(super) struct RememberedSend {
    accepted: Arc<Authorized>,
    target: Target,
    revision: i32,
    loopback: bool,
}

impl RememberedSend {
    /// The guess for `req`, when the grant and the chat are remembered and every gate passes on
    /// them; `None` sends it the ordinary way.
    pub(super) fn of(state: &Sender, grant: Option<&VerifiedGrant>, req: &NewSend) -> Option<Self> {
        let grant = grant?;
        let accepted = state.grants.get(&grant.connection_id)?;
        let found = state.targets.get(&req.chat_id)?;
        let target = gates::allow(&accepted.viewer, Some(LookedUpChat::clone(&found))).ok()?;
        gates::session(state.connector.as_ref(), &target.account_id).ok()?;
        Some(Self {
            revision: i32::try_from(grant.revision).ok()?,
            loopback: grant.loopback,
            accepted,
            target,
        })
    }

    /// Reserve `req` (with `text` for the outbox) by the guarded statement. `Ok(None)` when a
    /// guard refused: nothing was reserved, the remembered grant and target are forgotten, and
    /// the ordinary way decides.
    pub(super) async fn reserve(
        self,
        state: &Sender,
        db: &deadpool_postgres::Client,
        req: &NewSend,
        text: &str,
    ) -> Result<Option<(Plan, Reserved)>, Error> {
        let connection_id = self.accepted.viewer.connection_id.clone();
        let plan = Plan::new(&connection_id, self.target, req)?;
        let r = plan.reservation();
        let outbox = Some(text);
        let mut params: Vec<&(dyn ToSql + Sync)> = r.params(&outbox).to_vec();
        let account = super::gates::account_of(&req.chat_id);
        params.extend([
            &self.revision as &(dyn ToSql + Sync),
            &self.loopback,
            &self.accepted.row,
            &req.chat_id,
            &account,
        ]);
        let result = async {
            let stmt = db.prepare_cached(&GUARDED_RESERVE).await?;
            db.query_one(&stmt, &params).await
        };
        match result.await {
            Ok(row) => {
                let inserted = row.try_get(0).context(CONTEXT)?;
                let reserved = journal::reserved(db, &r, inserted).await.context(CONTEXT)?;
                Ok(Some((plan, reserved)))
            }
            Err(e) if e.code() == Some(&SqlState::DIVISION_BY_ZERO) => {
                state.grants.forget(&connection_id);
                state.targets.forget(&req.chat_id);
                tracing::debug!(connection.id = %connection_id, "send guess refused; taking the ordinary path");
                Ok(None)
            }
            Err(e) => {
                let statement = (GUARDED_RESERVE.as_str(), params.as_slice());
                let reserved = super::unreserved(state, &r, e.into(), statement).await?;
                Ok(Some((plan, reserved)))
            }
        }
    }
}
