-- Failed owner logins per source (#26 item 5): one stranger's burst locks out that stranger, not
-- the owner. A source is what the owner listener's socket saw (an IPv4 address, an IPv6 /64), or
-- `unknown` when the worker cannot believe the gateway that reported it. `owner_login_throttle`
-- keeps one global count on top, with a much higher allowance, so guessing from many sources at
-- once stays bounded too; its failures are forgotten an hour after the last one.

create table owner_login_sources (
    source          text primary key,
    failures        integer not null default 0,
    locked_until    timestamptz,
    last_failure_at timestamptz not null default now()
);
-- Old sources are pruned by age.
create index owner_login_sources_last_failure on owner_login_sources (last_failure_at);

alter table owner_login_throttle add column last_failure_at timestamptz;
-- The old global count was the per-source one; under the new allowance it starts again.
update owner_login_throttle set failures = 0, locked_until = null;
