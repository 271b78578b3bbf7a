-- An account the owner paused stays paused (#27): the pause is kept here, not only in the serving
-- worker's memory, so a restart or another worker taking the account over does not reconnect a
-- phone the owner disconnected. Set when the owner pauses, cleared when they resume, unlink or
-- pair again; null while the account may connect.
alter table accounts add column paused_at timestamptz;
