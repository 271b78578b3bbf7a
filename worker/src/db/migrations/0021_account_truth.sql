-- Each account's truth for the owner's dashboard (#27 item 5), recorded by the worker serving it:
-- the history sync it is receiving, and what its archive holds, counted every few minutes (a
-- count of millions of rows is too dear for every page view).
alter table account_status
    add column history_pages    integer,
    add column history_messages bigint,
    add column history_percent  smallint,
    add column messages         bigint,
    add column chats            bigint,
    add column media            bigint,
    add column newest_at        timestamptz,
    add column disk_bytes       bigint,
    add column counted_at       timestamptz;
