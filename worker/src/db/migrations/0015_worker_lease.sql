-- One worker at a time (#25): the lease a worker must hold to serve, archive and send, and the
-- fence that refuses the writes of a worker that lost it.
--
-- A lease row names what it owns (`accounts:*`, every account; one row per account later). A
-- worker takes it when it has expired, by bumping `epoch` (the fencing token) under `for update`,
-- and keeps it by pushing `expires_at` forward; both use the database's clock.
create table worker_lease (
    name       text primary key,
    epoch      bigint not null default 0,
    holder     text,
    expires_at timestamptz not null default '-infinity'
);
insert into worker_lease (name) values ('accounts:*');

-- A worker's sessions carry its lease and epoch (`-c wazap.lease=… -c wazap.epoch=…`). Before any
-- statement that writes the archive or the journal, the fence takes a key-share lock on the lease
-- row only if it still has that epoch: a takeover bumps the epoch under `for update`, so it waits
-- for the old holder's writes in flight, and every later one fails here (SQLSTATE WZF01).
-- Sessions without the settings — the command line, migrations, the tests' own checks — are not
-- a serving worker and pass.
create function wazap_fence() returns trigger language plpgsql as $$
declare
    my_lease text := current_setting('wazap.lease', true);
    my_epoch text := current_setting('wazap.epoch', true);
begin
    if coalesce(my_lease, '') = '' or coalesce(my_epoch, '') = '' then
        return null;
    end if;
    perform 1 from worker_lease l
     where l.name = my_lease and l.epoch = my_epoch::bigint
       for key share;
    if not found then
        raise exception 'this worker no longer holds its lease; another one has taken over'
            using errcode = 'WZF01';
    end if;
    return null;
end
$$;

do $$
declare
    t text;
begin
    foreach t in array array['messages', 'chats', 'chat_aliases', 'chat_merges', 'contacts',
                             'groups', 'attachments', 'stories', 'accounts', 'send_journal',
                             'send_journal_keys', 'send_outbox']
    loop
        execute format('create trigger wazap_fence before insert or update or delete on %I
                        for each statement execute function wazap_fence()', t);
    end loop;
end
$$;
