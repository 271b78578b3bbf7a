-- Workers share the accounts (#27): each account is owned by one worker at a time through a
-- lease of its own (`account:<id>`), so the archive's positions become per account and the
-- lease on every account (`accounts:*`, 0015) is retired.
--
-- Positions: each account's writer numbers its own messages, so two workers writing two
-- accounts never share a counter. A position is unique within its account; the positions
-- stored so far were unique across the archive, so they stay valid, and every cursor an agent
-- holds keeps its place.
drop index messages_position;
create unique index messages_account_position on messages (account_id, position);

-- A worker of an older version holds `accounts:*` and knows nothing of the per-account leases:
-- bumping its epoch fences its writes at once, and a lease that never expires keeps every
-- older worker a standby, so old and new never write together during an upgrade.
update worker_lease
   set epoch = epoch + 1, holder = 'retired by 0019: one lease per account',
       expires_at = 'infinity'
 where name = 'accounts:*';

-- One lease row per account (workers add the rows of accounts added later).
insert into worker_lease (name)
select 'account:' || account_id from accounts where removed_at is null
on conflict (name) do nothing;

-- Which workers are alive, so each takes its fair share of the accounts: a worker refreshes
-- its row every second; rows not refreshed for a few seconds are workers gone.
create table worker_presence (
    holder  text primary key,
    seen_at timestamptz not null default now()
);

-- Each account's session state as its owning worker last saw it, for every worker's owner
-- dashboard (only the owner's connector knows it).
create table account_status (
    account_id text primary key,
    state      text not null,
    since      timestamptz not null default now(),
    holder     text,
    updated_at timestamptz not null default now()
);

-- Chat statistics lag their messages per account now (each account has its own writer): the
-- mark moves from the archive to each account.
alter table accounts add column chat_stats_dirty boolean not null default false;
update accounts
   set chat_stats_dirty = coalesce((select chat_stats_dirty from archive_meta), false);
alter table archive_meta drop column chat_stats_dirty;
