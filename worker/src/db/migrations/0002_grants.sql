-- Grants: the signing keys behind bearer tokens, AI connections with their read scope and send
-- permission, and the owner's archive policy.

create table signing_keys (
    kid           text primary key,
    private_pkcs8 bytea not null,
    public_x      text not null,       -- base64url public key, as published in the JWKS
    created_at    timestamptz not null default now(),
    retired_at    timestamptz
);

create table connections (
    connection_id text primary key,
    name          text not null,
    kind          text not null check (kind in ('local', 'remote')),
    created_at    timestamptz not null default now(),
    expires_at    timestamptz not null,
    revoked_at    timestamptz,
    revision      integer not null default 0,   -- credential revision; a rotation bumps it
    read_scope    jsonb not null,
    send_mode     text not null default 'none' check (send_mode in ('none', 'selected', 'all')),
    send_chats    text[] not null default '{}',
    send_revision integer not null default 0
);

create table archive_policy (
    singleton      boolean primary key default true check (singleton),
    excluded_chats text[] not null default '{}',   -- opaque chat ids never stored nor returned
    revision       integer not null default 0
);
insert into archive_policy default values;
