//! `scripts/dev --phone`: a WhatsApp test network on loopback with your simulated phone
//! (+1 555 000 0001) and two contacts who write to you once you link, and answer what you send
//! them. Link from wazap's dashboard: Account → Show a QR code → "The QR code as text", then paste
//! that text here.

use std::collections::HashSet;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, BufReader};
use wanet::{Network, Phone};

const YOU: &str = "15550000001";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let addr: std::net::SocketAddr = std::env::var("WANET_ADDR")
        .unwrap_or_else(|_| "127.0.0.1:4100".into())
        .parse()
        .map_err(|_| anyhow::anyhow!("WANET_ADDR: expected 127.0.0.1:PORT"))?;
    let net = Network::start_on(addr).await?;
    let you = net.phone(YOU, "You").await?;
    let alice = net.phone("15550000002", "Alice").await?;
    let bob = net.phone("15550000003", "Bob").await?;
    eprintln!(
        "\nWhatsApp TEST NETWORK at {} (not WhatsApp: simulated phones only).\n\
         Your phone: +{YOU}. Contacts: Alice +15550000002, Bob +15550000003.\n\
         Link: dashboard → Account → Show a QR code → \"The QR code as text\"; paste it here.\n",
        net.url()
    );
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut greeted = false;
    let mut answered: HashSet<String> = HashSet::new();
    loop {
        tokio::select! {
            line = lines.next_line() => match line? {
                Some(l) if l.contains(',') => match you.scan(l.trim()) {
                    Ok(()) => eprintln!("scanned: linking…"),
                    Err(e) => eprintln!("that QR text did not work: {e:#}"),
                },
                Some(_) => eprintln!("paste the QR code's text from the dashboard"),
                None => std::future::pending::<()>().await,
            },
            () = tokio::time::sleep(Duration::from_millis(250)) => {
                let linked = net.companions(YOU).iter().any(|d| net.is_online(YOU, *d));
                if linked && !greeted {
                    greeted = true;
                    alice.send_text(YOU, "Hi! Did the test network work?").await?;
                    bob.send_text(YOU, "Lunch tomorrow at 12?").await?;
                    alice.send_text(YOU, "Send me something and I'll answer.").await?;
                    eprintln!("linked: Alice and Bob wrote to you");
                }
                for contact in [&alice, &bob] {
                    answer(contact, &mut answered).await?;
                }
            }
        }
    }
}

/// A contact answers each message you sent it, once.
async fn answer(contact: &Phone, answered: &mut HashSet<String>) -> anyhow::Result<()> {
    for m in contact.received() {
        if m.chat.starts_with(YOU) && !m.from_me && answered.insert(m.id.clone()) {
            let text = m.text.unwrap_or_else(|| "(something)".into());
            contact.send_text(YOU, &format!("Got it: {text}")).await?;
        }
    }
    Ok(())
}
