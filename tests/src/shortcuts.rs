//! Shortcuts past the public API for staging what a test needs: the sim's inject and contact
//! ops, tokens signed with the worker's own key (expired, wrong audience), raw SQL.

use crate::{Stack, leak};

impl Stack {
    /// Inject one message through the sim's live path; returns its `message_id`.
    pub async fn inject(
        &self,
        message: wazap_shared::wire::sim::SimMessage,
    ) -> anyhow::Result<String> {
        use wazap_shared::subjects::sim_op;
        leak::record_secret(leak::kind::MESSAGE_TEXT, &message.text);
        let ack = self
            .sim(
                sim_op::INJECT_MESSAGE,
                &wazap_shared::wire::sim::InjectMessage { message },
            )
            .await?;
        ack.ids
            .into_iter()
            .next()
            .ok_or_else(|| anyhow::anyhow!("inject_message returned no id"))
    }

    /// Add a contact (phone JID, optional LID) through the sim; its chat's id.
    pub async fn contact(
        &self,
        jid: &str,
        lid: Option<&str>,
        name: &str,
    ) -> anyhow::Result<String> {
        use wazap_shared::subjects::sim_op;
        let c = wazap_shared::wire::sim::UpsertContact {
            jid: jid.into(),
            lid: lid.map(Into::into),
            name: name.into(),
        };
        let ack = self.sim(sim_op::UPSERT_CONTACT, &c).await?;
        ack.ids
            .into_iter()
            .next()
            .ok_or_else(|| anyhow::anyhow!("upsert_contact returned no chat id"))
    }
}

impl Stack {
    /// Sign arbitrary claims with the worker's current key (for expired or wrong-audience tokens).
    pub async fn sign(&self, claims: &serde_json::Value) -> anyhow::Result<String> {
        let client = self.pool.get().await?;
        let row = client
            .query_one(
                "select kid, private_pkcs8 from signing_keys where retired_at is null order by created_at desc limit 1",
                &[],
            )
            .await?;
        let kid: String = row.get(0);
        let der: Vec<u8> = row.get(1);
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
        header.kid = Some(kid);
        let token = jsonwebtoken::encode(
            &header,
            claims,
            &jsonwebtoken::EncodingKey::from_ed_der(&der),
        )?;
        leak::record_token(leak::kind::BEARER, &token);
        Ok(token)
    }

    /// Run SQL against the test database (to stage states no API offers yet).
    pub async fn sql(&self, statement: &str) -> anyhow::Result<()> {
        self.pool.get().await?.batch_execute(statement).await?;
        Ok(())
    }
}
