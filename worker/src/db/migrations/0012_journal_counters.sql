-- Every connection has its key counter from the start, so each reservation locks it before it
-- inserts its key (`send::journal::reserve`). Without the row, the first reservations of a
-- connection locked nothing: one that began before the row was committed inserted its key and
-- then queued for the row, which another held while it queued for that key — a deadlock.
insert into send_journal_keys (connection_id, keys)
select c.connection_id,
       (select count(*) from send_journal j where j.connection_id = c.connection_id)
  from connections c
on conflict (connection_id) do nothing;
