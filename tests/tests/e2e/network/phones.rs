//! The network itself, before wazap is put on it: two phones exchange an end-to-end encrypted
//! message through the server.

use std::time::Duration;

#[tokio::test]
async fn two_phones_exchange_a_text() -> anyhow::Result<()> {
    wazap_tests::init_logs();
    let net = super::start_network().await?;
    let alice = net.phone("15550000001", "Alice").await?;
    let bob = net.phone("15550000002", "Bob").await?;
    let id = alice.send_text(bob.number(), "hello bob").await?;
    let got = bob
        .wait_for(Duration::from_secs(10), |m| m.id == id)
        .await?;
    assert_eq!(got.text.as_deref(), Some("hello bob"));
    assert_eq!(got.chat, "15550000001@s.whatsapp.net");
    assert!(!got.from_me);
    alice.stop().await;
    bob.stop().await;
    Ok(())
}
