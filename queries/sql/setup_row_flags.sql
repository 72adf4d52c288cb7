-- At connect: each row's flags start as its static flags (setup_runs.sql adds its latest run's).
UPDATE programs SET row_flags = static_flags,
                    flagged = list_has_any(static_flags, (SELECT list(name) FROM checks WHERE hack))
WHERE len(static_flags) > 0;
