-- The search vector from lexemes the writer cuts in Rust (`archive::lexemes`), not from
-- Postgres's parser: `to_tsvector` with `unaccent` cost ~12 µs of CPU per message and held
-- history-sync ingest near 29k messages/s; `array_to_tsvector` of ready lexemes is a few µs
-- (DESIGN §11: ≥ 50k/s with every index live). Queries are cut by the same Rust rule and cast
-- straight to tsquery, so both sides agree. `#private` messages still index nothing.

drop index if exists messages_search;
alter table messages drop column search;
alter table messages rename column emoji to lexemes;

-- Rows written before this migration carry only their emoji here: add their words as
-- Postgres's parser cut them (close to the new rule: lower-case, unaccented).
update messages
   set lexemes = nullif(concat_ws(' ',
           array_to_string(tsvector_to_array(to_tsvector('wazap_search', text)), ' '),
           lexemes), '')
 where not private and text <> '';

alter table messages add column search tsvector generated always as (
    case when private then ''::tsvector
         else coalesce(array_to_tsvector(string_to_array(lexemes, ' ')), ''::tsvector) end
) stored;

create index messages_search on messages using gin (search) with (fastupdate = on);
