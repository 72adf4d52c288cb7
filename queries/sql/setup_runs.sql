-- At connect and whenever result files change: the run results of this store's programs, the latest result of
-- each row, and that latest verdict and its flags copied onto the row in `programs` (so filters on it need no
-- join).
-- A result belongs to a row when it names the row's id AND the row's program hash: every store shares the runs
-- folder, and the same row id means another program in another store. Results that name no hash (older logs)
-- match by row id alone.
-- `recency` is the one definition of "newer" the project uses: 1 for the newest result of all, by `finished_at`
-- (unknown times oldest), then results file name, then line, both descending. Every "newest first" and "latest
-- verdict" query orders by it (`runs_latest` here; agreement.sql takes the latest per profile).
CREATE OR REPLACE TABLE runs AS
SELECT r.*, row_number() OVER (ORDER BY r.finished_at DESC NULLS LAST, r.results_file DESC, r.line DESC) AS recency
FROM runs_arrow r
JOIN programs p ON p.id = r.row_id AND (r.program_sha256 IS NULL OR r.program_sha256 = p.program_sha256);

CREATE OR REPLACE VIEW runs_latest AS
SELECT * FROM runs
QUALIFY recency = min(recency) OVER (PARTITION BY row_id);

UPDATE programs SET measured_status = NULL, measured_error = NULL, measured_flags = NULL, triton_share = NULL,
                    run_flags = NULL,
                    flagged = coalesce(list_has_any(static_flags, (SELECT list(name) FROM checks WHERE hack)), false)
WHERE measured_status IS NOT NULL;

-- run_flags: each flag by its entry name (`state_loaded:2/2` -> state_loaded, `refused: socket.connect` -> refused)
UPDATE programs SET measured_status = r.status, measured_error = r.error_type, measured_flags = r.flags,
                    triton_share = r.triton_share,
                    run_flags = list_distinct(list_transform(r.flags, lambda f: trim(split_part(f, ':', 1))))
FROM runs_latest r
WHERE programs.id = r.row_id;

UPDATE programs SET flagged = true
WHERE measured_status IS NOT NULL AND list_has_any(run_flags, (SELECT list(name) FROM checks WHERE hack));
