-- Search that does not walk (#29, docs/search.md): beside its words, every message carries keys
-- for its chat and its time bucket at three sizes, under one GIN index with the words, so "the
-- newest matches" is a few index probes of "these words in this bucket" (newest bucket first)
-- whose cost follows the page, not the word's frequency or the archive's size.
--
-- The keys start with `~`, which no lexeme of the word rule (`archive::lexemes`) keeps, so no
-- query word can match one. A bucket key is `~<shift>.<n>`: n is the message's Unix time
-- shifted right by 22, 17 or 12 bits (~49 days, ~36 hours, ~68 minutes), each size nesting in
-- the one above. The chat key is 8 hex digits of the chat id's md5: two chats sharing one only
-- widen a probe (the chat filter stays in SQL too), never change an answer.
--
-- The functions are the one place the key rule lives: the generated column writes keys with
-- them, and `archive::read::search` probes with them. They are neither `strict` nor use
-- `numeric`, so Postgres inlines them into one expression: as strict functions around a
-- non-strict array they ran as separate function calls, ~85 µs a row (the ingest at half
-- speed); inlined, a few µs. A message's chat and time never change,
-- so its keys are written once; an edit rewrites the words, a delete or `#private` leaves no
-- words (so no match), and the keys need nothing more.

create function search_bucket(shift int, ts timestamptz) returns int8
    language sql immutable parallel safe
    return floor(date_part('epoch', ts - timestamptz '1970-01-01 00:00:00+00'))::int8 >> shift;

create function search_bucket_key(shift int, n int8) returns text
    language sql immutable parallel safe
    return '~' || shift || '.' || n;

create function search_chat_key(chat text) returns text
    language sql immutable parallel safe
    return '~c' || left(md5(chat), 8);

create function search_keys(chat text, ts timestamptz) returns tsvector
    language sql immutable parallel safe
    return array_to_tsvector(array[
        search_chat_key(chat),
        search_bucket_key(22, search_bucket(22, ts)),
        search_bucket_key(17, search_bucket(17, ts)),
        search_bucket_key(12, search_bucket(12, ts))]);

-- Existing rows get their keys as the table is rewritten here: minutes for millions of
-- messages, once.
drop index messages_search;
alter table messages add column search_keys tsvector
    generated always as (search_keys(chat_id, ts)) stored;

-- Words and keys in one index: GIN intersects a probe's word and key entries in one scan,
-- skipping through the longer posting lists with the shorter one's entries. Messages without
-- words (media, deleted, `#private`) match no search and stay out of it.
create index messages_search on messages using gin (search, search_keys)
    where search is not null;

-- The planner's per-lexeme frequencies of the words choose each search's bucket size
-- (`archive::read::search::plan`): tracking more lexemes than the default 1,000 lets it tell
-- a word of a few hundred messages from one of a few thousand.
alter table messages alter column search set statistics 400;
