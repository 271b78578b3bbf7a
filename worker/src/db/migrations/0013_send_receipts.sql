-- When a sent message first reached a recipient's device and when it was first read (WhatsApp's
-- delivery and read receipts; `played` counts as read, and read implies delivered). Each is set
-- once by the first receipt that carries it and never moved, so a time once seen stays true.
-- Receipts name the WhatsApp id only, hence the index.
alter table send_journal
    add column delivered_at timestamptz,
    add column read_at      timestamptz;
create index send_journal_wa_id on send_journal (account_id, wa_id);
