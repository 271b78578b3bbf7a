//! `POST /api/send/*` through a real gateway gives the worker's outcomes with the HTTP statuses
//! of DESIGN §7: 200 with `outcome_unknown` and `failed` results, 404 for an unknown chat or
//! request, 507 when the journal is full.

use serde_json::{Value, json};
use wazap_shared::wire::sim::ArmSendFault;
use wazap_tests::post_raw;

use super::Sending;

async fn post(s: &Sending, url: &str, body: Value) -> anyhow::Result<(u16, Value)> {
    let auth = format!("Bearer {}", s.token);
    let (status, _, body) =
        post_raw(url, &[("authorization", &auth)], serde_json::to_vec(&body)?).await?;
    Ok((status, body))
}

#[tokio::test]
async fn the_json_api_answers_the_journal_outcomes_with_design_statuses() -> anyhow::Result<()> {
    let s = Sending::start().await?;
    let gw = s.stack.gateway(&[]).await?;
    let message = gw.url("/api/send/message");
    let status = gw.url("/api/send/status");

    s.arm(ArmSendFault {
        no_ack: true,
        no_ack_wait_ms: Some(200),
        ..Default::default()
    })
    .await?;
    let (code, body) = post(
        &s,
        &message,
        json!({"chat_id": s.chat, "request_id": "a1", "text": "hi"}),
    )
    .await?;
    assert_eq!(
        (code, body["state"].clone()),
        (200, json!("outcome_unknown"))
    );
    let (code, body) = post(&s, &status, json!({"request_id": "a1"})).await?;
    assert_eq!(
        (code, body["state"].clone(), body["duplicate"].clone()),
        (200, json!("outcome_unknown"), json!(true))
    );

    s.arm(ArmSendFault {
        fail_upload: true,
        ..Default::default()
    })
    .await?;
    let (code, body) = post(
        &s,
        &message,
        json!({"chat_id": s.chat, "request_id": "a2", "text": "hi"}),
    )
    .await?;
    assert_eq!((code, body["state"].clone()), (200, json!("failed")));

    let (code, body) = post(
        &s,
        &message,
        json!({"chat_id": "c_00000000000000000000", "request_id": "a3", "text": "hi"}),
    )
    .await?;
    assert_eq!(
        (code, body["error"]["code"].clone()),
        (404, json!("chat_not_found"))
    );
    let (code, body) = post(&s, &status, json!({"request_id": "nothing"})).await?;
    assert_eq!(
        (code, body["error"]["code"].clone()),
        (404, json!("not_found"))
    );
    let (code, body) = post(
        &s,
        &message,
        json!({"chat_id": "+972503330001", "request_id": "a4", "text": "hi"}),
    )
    .await?;
    assert_eq!(
        (code, body["error"]["code"].clone()),
        (400, json!("invalid_argument"))
    );

    let conn = s.grant.connection_id.clone();
    s.stack
        .sql(&format!(
            "insert into send_journal_keys (connection_id, keys) values ('{conn}', 100000)
             on conflict (connection_id) do update set keys = 100000"
        ))
        .await?;
    let (code, body) = post(
        &s,
        &message,
        json!({"chat_id": s.chat, "request_id": "a5", "text": "hi"}),
    )
    .await?;
    assert_eq!(
        (code, body["error"]["code"].clone()),
        (507, json!("send_journal_full"))
    );
    assert_eq!(
        s.transmissions().await?.len(),
        1,
        "only the no-ack send left"
    );
    Ok(())
}
