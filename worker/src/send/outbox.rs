//! The outbox: an own send's text waits here (never in the journal) from the hand-over until
//! WhatsApp acknowledges or echoes it, at most 24 h, only so `read_messages` can show the
//! connection's `unconfirmed_sends` for a chat (DESIGN §5.1).

use deadpool_postgres::GenericClient;
use wazap_shared::wire::read::UnconfirmedSend;

use crate::archive::private::has_private_tag;

/// This connection's sends to `chat_id` whose outcome is not known (in flight or
/// `outcome_unknown`), handed over in the last 24 h, that the archive has not seen echoed.
/// A text carrying `#private` is shown without its words, like the message would be.
pub async fn unconfirmed(
    db: &impl GenericClient,
    connection_id: &str,
    account_id: &str,
    chat_id: &str,
) -> anyhow::Result<Vec<UnconfirmedSend>> {
    let stmt = db
        .prepare_cached(
            "select o.request_id, o.text, o.handed_at
               from send_outbox o
               join send_journal j
                 on j.connection_id = o.connection_id and j.request_id = o.request_id
              where o.connection_id = $1 and o.account_id = $2 and o.chat_id = $3
                and o.handed_at > now() - interval '24 hours'
                and j.state in ('transmitting', 'outcome_unknown')
                and not exists (select 1 from messages m
                                 where m.account_id = o.account_id
                                   and m.message_id = o.message_id)
              order by o.handed_at, o.request_id",
        )
        .await?;
    let rows = db
        .query(&stmt, &[&connection_id, &account_id, &chat_id])
        .await?;
    rows.iter()
        .map(|r| {
            let text: String = r.try_get(1)?;
            Ok(UnconfirmedSend {
                draft_id: r.try_get(0)?,
                text: if has_private_tag(&text) {
                    String::new()
                } else {
                    text
                },
                handed_at: r.try_get(2)?,
                state: "unknown".to_owned(),
            })
        })
        .collect()
}

/// Delete outbox rows that are older than 24 h, whose send ended without doubt (accepted or
/// failed), or whose message the archive now holds (the echo came).
pub async fn sweep(db: &impl GenericClient) -> anyhow::Result<u64> {
    Ok(db
        .execute(
            "delete from send_outbox o
              where o.handed_at <= now() - interval '24 hours'
                 or exists (select 1 from send_journal j
                             where j.connection_id = o.connection_id
                               and j.request_id = o.request_id
                               and j.state in ('accepted', 'failed'))
                 or exists (select 1 from messages m
                             where m.account_id = o.account_id
                               and m.message_id = o.message_id)",
            &[],
        )
        .await?)
}
