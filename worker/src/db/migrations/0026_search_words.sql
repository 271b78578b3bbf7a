-- The words of each account's archive, so a prefix (`amanh*`) can be read as the words it
-- stands for (#29, docs/search.md). A prefix handed to the word index is a partial match: GIN
-- reads and ORs the posting list of every word that starts with it before it can intersect
-- them with a time or chat key, so its cost grew with how common the prefix is. Spelled out as
-- `'amanha' | 'amanhecer' | …`, each word's list is skipped through like a whole word's, and
-- the search reads bucket by bucket as whole words do.
--
-- Kept by Postgres itself, in the transaction that writes the words (an insert, an edit, a
-- resent placeholder): whatever path the writer takes, a committed message's words are here.
-- No unique constraint, on purpose: two history chunks written side by side would wait on each
-- other's uncommitted words while the writer orders their commits (a deadlock no one
-- detects); a word already here is skipped, and the rare copy two chunks add at once is read
-- away with `distinct`. Words of messages later deleted or made `#private` stay: they name no
-- message, and a word with no match only costs an empty probe. `#private` words never come in
-- (a private message has no vector). Each of a chunk's distinct words is one probe of the
-- words' index (`offset 0` keeps it a probe: as a join the plan, cached for the session, could
-- hash the whole table once it grows).
create table search_words (
    account_id text not null references accounts,
    lexeme     text collate "C" not null
);
create index search_words_lexeme on search_words (account_id, lexeme);

create function search_words_add() returns trigger
    language plpgsql as $$
begin
    insert into search_words (account_id, lexeme)
    select w.account_id, w.lexeme
      from (select distinct n.account_id, l.lexeme
              from new_rows n, unnest(tsvector_to_array(n.search)) l(lexeme)
             where n.search is not null) w
     where not exists (select from search_words s
                        where s.account_id = w.account_id and s.lexeme = w.lexeme offset 0);
    return null;
end $$;

create trigger messages_words_insert after insert on messages
    referencing new table as new_rows for each statement execute function search_words_add();
create trigger messages_words_update after update on messages
    referencing new table as new_rows for each statement execute function search_words_add();

-- The words of the messages archived so far: one pass over the table, once.
insert into search_words (account_id, lexeme)
select distinct account_id, unnest(tsvector_to_array(search)) from messages
 where search is not null;
