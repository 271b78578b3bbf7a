-- The account registry (#27): every WhatsApp account this deployment keeps. `default` is the
-- first; an owner adds others under ids of their own choosing (`work`, `2nd-phone`). An archive
-- from before the registry has only `default`, kept as it is: its ids carry no account suffix,
-- so every chat, message and attachment id an agent holds still resolves, and no token changes.
--
-- `connector` is the kind the account runs on; null is the deployment's WAZAP_CONNECTOR (what
-- `default` always used). A removed account's archive may be kept: `removed_at` is set, it is
-- no longer connected, and it reads as it was.
alter table accounts
    add column display_name text,
    add column connector    text check (connector in ('whatsapp', 'demo', 'sim')),
    add column removed_at   timestamptz;

insert into accounts (account_id) values ('default') on conflict (account_id) do nothing;
update accounts set display_name = 'Default' where account_id = 'default' and display_name is null;
update accounts set display_name = account_id where display_name is null;
alter table accounts alter column display_name set not null;
