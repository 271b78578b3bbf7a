-- Send attempts the worker refused before journaling them (#27 item 5): which connection tried
-- which chat with which tool, why it was refused, and when — so the owner sees what an agent
-- tried. Never the text, caption or media of the attempt, and only attempts on a chat that
-- exists (a made-up chat id names nothing the owner could recognise).
--
-- `reason`: `send_not_permitted` (the chat is readable, the send permission does not cover it)
-- or `chat_out_of_scope` (outside the read scope or the archive policy; the agent was answered
-- `chat_not_found`). `tool` is null for a media send refused at its pre-check, before the
-- gateway stored bytes. Bounded: each insert deletes all but the newest rows (the worker's
-- `MAX_REFUSALS`), so an agent retrying a refused send in a loop cannot grow the table.
create table send_refusals (
    id            bigserial primary key,
    connection_id text not null,
    account_id    text not null,
    chat_id       text not null,
    tool          text,
    reason        text not null check (reason in ('send_not_permitted', 'chat_out_of_scope')),
    at            timestamptz not null default now()
);
create index send_refusals_connection on send_refusals (connection_id, id);
