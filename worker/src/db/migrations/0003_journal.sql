-- The send journal (DESIGN §5): one row per (credential, request_id), never the text or the
-- bytes; a per-credential key counter (the 100,000-key cap without count(*)); the outbox that
-- holds an own send's text only until WhatsApp echoes it (or 24 h); and the sim connector's
-- transmission log, which must survive a crash of the worker.

create table send_journal (
    connection_id text not null,       -- the credential; rotation keeps the id, so keys persist
    request_id    text not null,
    tool          text not null,       -- send_message | send_media | send_voice_note
    account_id    text not null,
    chat_id       text not null,
    digest        bytea not null,      -- SHA-256 over (tool, chat, payload)
    recipient     text not null,       -- the chat's JID as the connector addresses it
    wa_id         text not null,       -- the WhatsApp message id, allocated before transmission
    message_id    text not null,       -- its opaque id in the archive
    state         text not null check (state in
                      ('reserved', 'transmitting', 'accepted', 'outcome_unknown', 'failed')),
    created_at    timestamptz not null default now(),
    updated_at    timestamptz not null default now(),
    accepted_at   timestamptz,
    primary key (connection_id, request_id)
);
-- Start-up recovery looks for unfinished sends only.
create index send_journal_open on send_journal (state) where state in ('reserved', 'transmitting');

create table send_journal_keys (
    connection_id text primary key,
    keys          integer not null
);

create table send_outbox (
    connection_id text not null,
    request_id    text not null,
    account_id    text not null,
    chat_id       text not null,
    message_id    text not null,       -- the archive id the echo will get
    text          text not null,
    handed_at     timestamptz not null default now(),
    primary key (connection_id, request_id)
);
create index send_outbox_chat on send_outbox (account_id, chat_id, handed_at);

-- sim connector only: what it "transmitted" (no text, no bytes).
create table sim_transmissions (
    seq        bigserial primary key,
    account_id text not null,
    recipient  text not null,
    wa_id      text not null,
    kind       text not null,
    mime_type  text,
    size       bigint,
    ptt        boolean not null default false,
    caption    boolean not null default false,
    at         timestamptz not null default now()
);
