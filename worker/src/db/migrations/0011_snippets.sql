-- Snippets are cut by the worker with the index's own rule (`archive::read::snippet`), so the
-- text-search configuration that only `ts_headline` still used goes. The `unaccent` extension
-- stays: migration 0004 created it only if it was missing, so it may not be ours to drop.
drop text search configuration if exists wazap_search;
