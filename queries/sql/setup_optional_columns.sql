-- At connect: the index columns a store may lack (queries/store.py OPTIONAL_COLUMNS), as nulls ("not checked").
ALTER TABLE programs ADD COLUMN IF NOT EXISTS static_flags VARCHAR[];
ALTER TABLE programs ADD COLUMN IF NOT EXISTS near_dup_cluster VARCHAR;
ALTER TABLE programs ADD COLUMN IF NOT EXISTS near_dup_component VARCHAR;
