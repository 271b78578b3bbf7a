//! The owner ops (`owner_*`, DESIGN §6): no bearer grant, a session instead. Every op but
//! `owner_login` needs a current session ([`session::check`]); writes also need its CSRF token,
//! and a write refused for CSRF runs nothing. Reads never change owner data (only the session's
//! idle timer moves).

use serde::Serialize;
use serde::de::DeserializeOwned;
use wazap_shared::subjects::op;
use wazap_shared::wire::accounts::{AddAccountRequest, RemoveAccountRequest};
use wazap_shared::wire::oauth::{ConsentDecision, ConsentRequest};
use wazap_shared::wire::owner::{
    AccountActionCall, AccountRef, ChatsRequest, ConnectionList, CreateConnectionRequest, Empty,
    LoginRequest, OwnerAnswer, OwnerCall, ReadScopeRequest, RevokeRequest, RotateRequest,
    SendPermissionRequest, SendsRequest, SessionInfo, SetPolicyRequest,
};

use super::{decode, finish};
use crate::error::Error;
use crate::grants::{self, NewConnection};
use crate::oauth;
use crate::owner::session::{self, Checked, Session};
use crate::owner::source::Source;
use crate::owner::{account, chats, connections, policy, sends};
use crate::state::AppState;

/// Whether an op changes anything (and so needs the CSRF token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

/// Serve owner op `op`; `None` when `op` is not an owner op.
pub(super) async fn dispatch(
    state: &AppState,
    op: &str,
    payload: &[u8],
) -> Option<(bytes::Bytes, &'static str)> {
    use Access::{Read, Write};
    let db = &state.db;
    Some(match op {
        op::OWNER_LOGIN => finish(login(state, payload).await),
        op::OWNER_LOGOUT => {
            run::<Empty, _>(state, payload, Write, async |call, _| {
                session::logout(db, call.session.as_deref().unwrap_or_default()).await?;
                Ok(OwnerAnswer::Done(Empty {}))
            })
            .await
        }
        op::OWNER_SESSION => {
            run::<Empty, _>(state, payload, Read, async |_, s: Session| {
                Ok(OwnerAnswer::Done(SessionInfo {
                    session: None,
                    csrf: s.csrf,
                    expires_at: s.expires_at,
                }))
            })
            .await
        }
        op::OWNER_LIST_CONNECTIONS => {
            run::<Empty, _>(state, payload, Read, async |_, _| {
                let rows = grants::list_connections(db).await?;
                Ok(OwnerAnswer::Done(ConnectionList {
                    connections: rows.into_iter().map(connections::to_owner).collect(),
                }))
            })
            .await
        }
        op::OWNER_CREATE_CONNECTION => {
            run::<CreateConnectionRequest, _>(state, payload, Write, async |call, _| {
                let b = call.body;
                let new = NewConnection {
                    name: b.name,
                    kind: b.kind,
                    expires_at: b.expires_at,
                    read_scope: b.read_scope,
                };
                let (row, token) = grants::create_connection(db, new).await?;
                Ok(OwnerAnswer::Done(
                    wazap_shared::wire::owner::IssuedConnection {
                        connection: connections::to_owner(row),
                        token,
                    },
                ))
            })
            .await
        }
        op::OWNER_ROTATE_CONNECTION => {
            run::<RotateRequest, _>(state, payload, Write, async |call, _| {
                connections::new_revision(db, &call.body.id, call.body.revision, None).await
            })
            .await
        }
        op::OWNER_SET_READ_SCOPE => {
            run::<ReadScopeRequest, _>(state, payload, Write, async |call, _| {
                let b = call.body;
                connections::new_revision(db, &b.id, b.revision, Some(b.read_scope)).await
            })
            .await
        }
        op::OWNER_REVOKE_CONNECTION => {
            run::<RevokeRequest, _>(state, payload, Write, async |call, _| {
                grants::revoke_connection(db, &call.body.id).await?;
                Ok(OwnerAnswer::Done(Empty {}))
            })
            .await
        }
        op::OWNER_SET_SEND_PERMISSION => {
            run::<SendPermissionRequest, _>(state, payload, Write, async |call, _| {
                connections::set_send_permission(db, call.body).await
            })
            .await
        }
        op::OWNER_LIST_CHATS => {
            run::<ChatsRequest, _>(state, payload, Read, async |call, _| {
                chats::list(db, call.body).await.map(OwnerAnswer::Done)
            })
            .await
        }
        op::OWNER_POLICY => {
            run::<Empty, _>(state, payload, Read, async |_, _| {
                policy::get(db).await.map(OwnerAnswer::Done)
            })
            .await
        }
        op::OWNER_SET_POLICY => {
            run::<SetPolicyRequest, _>(state, payload, Write, async |call, _| {
                policy::set(db, call.body).await
            })
            .await
        }
        op::OWNER_ACCOUNT => {
            run::<AccountRef, _>(state, payload, Read, async |call, _| {
                let id = account::checked_id(call.body.account())?;
                let served = state.serving(id).await?;
                Ok(OwnerAnswer::Done(account::view(&served.connector, id)))
            })
            .await
        }
        op::OWNER_ACCOUNT_ACTION => {
            run::<AccountActionCall, _>(state, payload, Write, async |call, _| {
                let id = account::checked_id(call.body.account())?.to_owned();
                let served = state.serving(&id).await?;
                account::act(&served.connector, &served.pool, &id, call.body.action)
                    .await
                    .map(OwnerAnswer::Done)
            })
            .await
        }
        op::OWNER_RECENT_SENDS => {
            run::<SendsRequest, _>(state, payload, Read, async |call, _| {
                sends::recent(db, call.body).await.map(OwnerAnswer::Done)
            })
            .await
        }
        op::OWNER_LIST_ACCOUNTS => {
            run::<Empty, _>(state, payload, Read, async |_, _| {
                let served = &state.served;
                let live = |id: &str| served.get(id).map(|a| a.connector.state(id));
                account::list(db, &live).await.map(OwnerAnswer::Done)
            })
            .await
        }
        op::OWNER_ADD_ACCOUNT => {
            run::<AddAccountRequest, _>(state, payload, Write, async |call, _| {
                account::add(db, call.body).await.map(OwnerAnswer::Done)
            })
            .await
        }
        op::OWNER_REMOVE_ACCOUNT => {
            run::<RemoveAccountRequest, _>(state, payload, Write, async |call, _| {
                account::remove(db, call.body).await.map(OwnerAnswer::Done)
            })
            .await
        }
        op::OWNER_OAUTH_REQUEST => {
            run::<ConsentRequest, _>(state, payload, Read, async |call, _| {
                oauth::consent::view(db, &call.body.request)
                    .await
                    .map(OwnerAnswer::Done)
            })
            .await
        }
        op::OWNER_OAUTH_DECIDE => {
            run::<ConsentDecision, _>(state, payload, Write, async |call, _| {
                oauth::consent::decide(db, call.body)
                    .await
                    .map(OwnerAnswer::Done)
            })
            .await
        }
        _ => return None,
    })
}

/// `owner_login`: no session needed; the caller's old session (if any) is replaced. The
/// gateway's `peer` is the throttle's source only when only gateways can publish requests.
async fn login(state: &AppState, payload: &[u8]) -> Result<OwnerAnswer<SessionInfo>, Error> {
    let call: OwnerCall<LoginRequest> = decode(payload)?;
    let source = Source::new(call.body.peer, state.tokens.trusts_gateways());
    let info = session::login(
        &state.db,
        call.session.as_deref(),
        &call.body.password,
        &source,
    )
    .await?;
    Ok(OwnerAnswer::Done(info))
}

/// Check the session first (so a caller without one learns nothing from validation), then
/// decode the body and run `handler`.
async fn run<B: DeserializeOwned, T: Serialize>(
    state: &AppState,
    payload: &[u8],
    access: Access,
    handler: impl AsyncFnOnce(OwnerCall<B>, Session) -> Result<OwnerAnswer<T>, Error>,
) -> (bytes::Bytes, &'static str) {
    let result = async {
        let auth: OwnerCall<serde_json::Value> = decode(payload)?;
        let checked = session::check(
            &state.db,
            auth.session.as_deref(),
            auth.csrf.as_deref(),
            access == Access::Write,
        )
        .await?;
        let session = match checked {
            Checked::Valid(s) => s,
            Checked::CsrfRejected => return Ok(OwnerAnswer::CsrfRejected),
        };
        let call: OwnerCall<B> = decode(payload)?;
        handler(call, session).await
    }
    .await;
    finish(result)
}
