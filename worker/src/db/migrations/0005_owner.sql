-- The owner of the dashboard (DESIGN §4, §6): one password (argon2id PHC string), sessions kept
-- by the SHA-256 of their id (a database read never yields a usable cookie) with the CSRF token
-- bound to each, and the failed-login counter that throttles guessing (persisted, so restarts
-- do not reset it).

create table owner_credentials (
    singleton     boolean primary key default true check (singleton),
    password_hash text not null,
    updated_at    timestamptz not null default now()
);

create table owner_sessions (
    id_sha256    bytea primary key,
    csrf         text not null,
    created_at   timestamptz not null default now(),
    last_seen_at timestamptz not null default now(),
    expires_at   timestamptz not null      -- absolute end; idle end = last_seen_at + idle limit
);

create table owner_login_throttle (
    singleton      boolean primary key default true check (singleton),
    failures       integer not null default 0,
    locked_until   timestamptz
);
insert into owner_login_throttle default values;
