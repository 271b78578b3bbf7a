-- search_attachments with a query (#29): a file matches when its name contains the query or its
-- caption (the message text) holds the query's words. Tested file by file newest first, that
-- read a message row per file — the whole archive for a rare name — so both sides get an index
-- whose cost follows the hits, not the archive (`archive::read::attachments`).

-- File names, any substring, case-insensitive (`filename ilike '%…%'`): trigrams. pg_trgm ships
-- with Postgres (contrib) and is a trusted extension, like unaccent (0004).
create extension if not exists pg_trgm;
create index attachments_filename on attachments using gin (filename gin_trgm_ops)
    where not story;

-- Captions: the word index over the messages that carry a file only (the kinds the connector
-- attaches files to; a read names these very kinds, or the planner cannot use the index), so
-- a word common in chat text but rare in captions reads only its captions. Most files have no
-- caption: their empty vectors add no entries.
create index messages_caption_search on messages using gin (search)
    where kind in ('image', 'video', 'audio', 'voice', 'document', 'sticker', 'view_once');
