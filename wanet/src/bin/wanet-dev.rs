//! `scripts/dev --phone`: a WhatsApp test network on loopback with your simulated phone
//! (+1 555 000 0001) holding a few days of chats with two contacts: once you link, it pushes that
//! history to wazap (and older messages when wazap asks for them), the contacts write to you,
//! and they answer what you send them. Link from wazap's dashboard: Account → Show a QR code → "The QR code as text", then paste
//! that text here.

use std::collections::HashSet;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, BufReader};
use wanet::{HistoryChat, Network, OnDemand, Phone};

const YOU: &str = "15550000001";
const ALICE: &str = "15550000002";
const BOB: &str = "15550000003";
const DAY: u64 = 86_400;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let addr: std::net::SocketAddr = std::env::var("WANET_ADDR")
        .unwrap_or_else(|_| "127.0.0.1:4100".into())
        .parse()
        .map_err(|_| anyhow::anyhow!("WANET_ADDR: expected 127.0.0.1:PORT"))?;
    let net = Network::start_on(addr).await?;
    let you = net.phone(YOU, "You").await?;
    let alice = net.phone(ALICE, "Alice").await?;
    let bob = net.phone(BOB, "Bob").await?;
    you.hold_older(OnDemand::Answer, older(now()?));
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
                    you.push_history(&history(now()?)).await?;
                    eprintln!("linked: your phone sent its recent history");
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

fn now() -> anyhow::Result<u64> {
    Ok(std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs())
}

/// One chat's messages as `(id, from you, seconds ago, text)`.
fn chat(with: &str, now: u64, messages: &[(&str, bool, u64, &str)]) -> HistoryChat {
    HistoryChat {
        with: with.into(),
        messages: messages
            .iter()
            .map(|(id, mine, ago, text)| ((*id).into(), *mine, now - ago, (*text).into()))
            .collect(),
    }
}

/// What the phone pushes when it links: the last few days.
fn history(now: u64) -> Vec<HistoryChat> {
    vec![
        chat(
            ALICE,
            now,
            &[
                ("DEV-A3", false, 3 * DAY, "Are you coming on Saturday?"),
                ("DEV-A4", true, 3 * DAY - 600, "Yes, I'll bring the cake."),
                ("DEV-A5", false, 2 * DAY, "Perfect, see you then!"),
            ],
        ),
        chat(
            BOB,
            now,
            &[
                ("DEV-B2", false, DAY, "Here are the notes from the meeting."),
                ("DEV-B3", true, DAY - 300, "Thanks, reading them now."),
            ],
        ),
    ]
}

/// What the phone still holds when wazap reads past the pushed history.
fn older(now: u64) -> Vec<HistoryChat> {
    vec![
        chat(
            ALICE,
            now,
            &[
                ("DEV-A1", false, 10 * DAY, "Happy birthday!"),
                ("DEV-A2", true, 10 * DAY - 60, "Thank you!"),
            ],
        ),
        chat(
            BOB,
            now,
            &[("DEV-B1", false, 8 * DAY, "Can we move the meeting?")],
        ),
    ]
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
