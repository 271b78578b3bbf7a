-- The archive: accounts, chats (opaque ids; every JID form of one person maps to one chat),
-- contacts, groups, messages (ordered by the archive position the single writer assigns,
-- de-duplicated on their natural key), attachments and stories. Every table carries account_id.

create table archive_meta (
    singleton  boolean primary key default true check (singleton),
    archive_id uuid not null,          -- the archive's identity (cursors carry it)
    id_key     bytea not null,         -- key of the keyed hashes behind opaque ids
    chat_stats_dirty boolean not null default false,  -- chats' last_message_at may lag messages
    created_at timestamptz not null default now()
);

create table accounts (
    account_id text primary key,
    own_jid    text,                   -- the linked account's phone JID, when known
    own_lid    text,                   -- and its LID
    created_at timestamptz not null default now()
);

create table chats (
    account_id      text not null references accounts,
    chat_id         text not null,
    kind            text not null check (kind in ('direct', 'group')),
    jid             text not null,     -- the JID the chat was first seen under
    name            text,              -- phonebook name or group subject
    push_name       text,              -- the name the person gave themselves (direct chats)
    phone           text,              -- E.164 digits, no '+', when the phone JID is known
    last_message_at timestamptz,       -- null: no message yet (e.g. a group sender's chat);
    last_position   bigint,            -- history sync updates both at most every ~50k messages
    unread_count    integer not null default 0,
    created_at      timestamptz not null default clock_timestamp(),  -- merges keep the older
    primary key (account_id, chat_id)
);
-- The only secondary index: every index here makes each chat-stats update dearer.
create index chats_recent on chats (account_id, last_message_at desc nulls last, chat_id);

-- Every JID form (phone number, LID) under which a chat is known.
create table chat_aliases (
    account_id text not null,
    jid        text not null,
    chat_id    text not null,
    primary key (account_id, jid),
    foreign key (account_id, chat_id) references chats
);
create index chat_aliases_chat on chat_aliases (account_id, chat_id);

-- Chats merged into another when one person's LID and phone forms turned out to be one:
-- an old chat id still resolves to the chat that absorbed it.
create table chat_merges (
    account_id   text not null,
    from_chat_id text not null,
    into_chat_id text not null,
    merged_at    timestamptz not null default now(),
    primary key (account_id, from_chat_id)
);

create table contacts (
    account_id text not null,
    chat_id    text not null,
    name       text not null,          -- the phonebook name
    primary key (account_id, chat_id),
    foreign key (account_id, chat_id) references chats
);

create table groups (
    account_id        text not null,
    chat_id           text not null,
    participant_count integer not null default 0,
    primary key (account_id, chat_id),
    foreign key (account_id, chat_id) references chats
);

-- No foreign key to chats and no unique (chat, wa_id): the single writer creates a message's
-- chat in the same transaction, and derives message_id from (chat, wa_id), so the primary key
-- is the natural key (after a merge the writer also checks the merged chat's ids). Each extra
-- index or per-row check would cost batch ingest a large share of its rate.
create table messages (
    account_id     text not null,
    position       bigint not null,    -- archive order, assigned by the single writer
    message_id     text not null,      -- m_ + keyed hash of (account, chat, WhatsApp id)
    chat_id        text not null,
    wa_id          text not null,      -- WhatsApp's id
    sender_jid     text,               -- canonical sender JID; null for the account itself
    sender_chat_id text,               -- the sender's direct chat
    sender_name    text,               -- the sender's push name at the time
    ts             timestamptz not null,
    kind           text not null,
    text           text not null default '',
    from_me        boolean not null,
    private        boolean not null default false,   -- carries #private: words never leave
    reply_to       text,               -- message_id replied or reacted to
    mentions_me    boolean not null default false,
    edited         boolean not null default false,
    reactions      jsonb,              -- null or [{"emoji","sender"}], one per sender
    primary key (account_id, message_id)
);
create unique index messages_position on messages (position);
create index messages_chat_ts on messages (account_id, chat_id, ts desc, position desc);

create table attachments (
    account_id    text not null,
    attachment_id text not null,       -- a_ + keyed hash of the message id
    message_id    text not null,       -- a message's or a story's id
    chat_id       text not null,       -- the message's chat; for a story, the poster's chat
    story         boolean not null default false,
    kind          text not null,
    mime_type     text not null,
    filename      text,
    size          bigint,
    seconds       integer,
    ts            timestamptz not null,
    thumbnail     bytea,               -- small JPEG
    media         jsonb,               -- connector's download info (direct path, keys, hashes)
    data          bytea,               -- cached bytes, after the first download
    primary key (account_id, attachment_id)
);
create index attachments_message on attachments (account_id, message_id);

create table stories (
    account_id     text not null references accounts,
    story_id       text not null,      -- shown as the story's message_id
    wa_id          text not null,
    sender_jid     text not null,
    sender_chat_id text not null,      -- the poster's direct chat: scope and policy apply to it
    sender_name    text,
    ts             timestamptz not null,
    kind           text not null,
    text           text not null default '',
    private        boolean not null default false,
    attachment_id  text,
    primary key (account_id, story_id)
);
create index stories_recent on stories (account_id, ts desc);
