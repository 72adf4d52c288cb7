-- At connect: rows whose static flags hold a hack flag (setup_runs.sql adds those of the latest runs). Only those
-- few rows are written: copying every row's flags would rewrite most of a 601k-row table (1.2 s).
UPDATE programs SET flagged = true
WHERE list_has_any(static_flags, (SELECT list(name) FROM checks WHERE hack));
