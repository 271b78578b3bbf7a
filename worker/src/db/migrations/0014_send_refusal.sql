-- WhatsApp's error code when its server refused a send (a nack, e.g. 479): kept for the owner and
-- for diagnosis, never echoed to the agent, whose answer is the contract's `outcome_unknown`.
alter table send_journal add column wa_error text;
