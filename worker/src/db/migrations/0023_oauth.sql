-- wazap as an OAuth 2.1 authorization server (#28). An OAuth client the owner approves becomes
-- an AI connection like any other (kind `remote`, marked with its client id); everything a
-- client holds is stored hashed: codes and refresh tokens are looked up by their SHA-256.

-- Registered clients: by Dynamic Client Registration (`dcr`, a random id) or by a Client ID
-- Metadata Document (`cimd`, the document's https URL, kept as a cache of what was fetched).
-- A registration the owner never approved lapses at `expires_at` (null once approved).
create table oauth_clients (
    client_id    text collate "C" primary key,
    registration text not null check (registration in ('dcr', 'cimd')),
    metadata     jsonb not null,
    created_at   timestamptz not null default now(),
    expires_at   timestamptz
);

alter table connections
    add column oauth_client_id text collate "C" references oauth_clients (client_id);

-- An authorization request waiting for the owner's decision on the consent page.
create table oauth_requests (
    request_id     text collate "C" primary key,
    client_id      text collate "C" not null references oauth_clients (client_id) on delete cascade,
    redirect_uri   text not null,
    code_challenge text not null,
    state          text,
    resource       text not null,
    expires_at     timestamptz not null
);

-- Authorization codes: single use, bound to client, redirect URI, PKCE challenge and resource.
-- A code presented again revokes the refresh family it was redeemed into.
create table oauth_codes (
    code_hash      bytea primary key,
    client_id      text collate "C" not null,
    connection_id  text collate "C" not null references connections (connection_id),
    redirect_uri   text not null,
    code_challenge text not null,
    resource       text not null,
    expires_at     timestamptz not null,
    used_at        timestamptz,
    family         text collate "C"
);

-- Refresh tokens, rotated on every use: each belongs to a family (one per redeemed code) and
-- to the connection's credential revision it was issued under. A token used twice revokes its
-- whole family.
create table oauth_refresh_tokens (
    token_hash    bytea primary key,
    family        text collate "C" not null,
    client_id     text collate "C" not null,
    connection_id text collate "C" not null references connections (connection_id),
    revision      integer not null,
    resource      text not null,
    created_at    timestamptz not null default now(),
    expires_at    timestamptz not null,
    used_at       timestamptz,
    revoked_at    timestamptz
);
create index oauth_refresh_tokens_family on oauth_refresh_tokens (family);
create index oauth_refresh_tokens_connection on oauth_refresh_tokens (connection_id);
