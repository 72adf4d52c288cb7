-- At connect and whenever result files change: the run results of this store's programs, the latest result of
-- each row, and that latest verdict and its flags copied onto the row in `programs` (so filters on it need no
-- join).
-- A result belongs to a row when it names the row's id AND the row's program hash: every store shares the runs
-- folder, and the same row id means another program in another store. Results that name no hash (older logs)
-- match by row id alone.
-- `recency` is the one definition of "newer" the project uses: 1 for the newest result of all, by `finished_at`
-- (unknown times oldest), then results file name, then line, both descending. Every "newest first" and "latest
-- verdict" query orders by it (`runs_latest` here; agreement.sql takes the latest per profile).
-- `runs_latest_gpu` is the latest GPU run, whose timing a CPU interpreter run never replaces; `programs.refuted`
-- marks rows whose latest verdict says they are not correct (every ranking of correct rows leaves them out).
CREATE OR REPLACE TABLE runs AS
SELECT r.*, row_number() OVER (ORDER BY r.finished_at DESC NULLS LAST, r.results_file DESC, r.line DESC) AS recency
FROM runs_arrow r
JOIN programs p ON p.id = r.row_id AND (r.program_sha256 IS NULL OR r.program_sha256 = p.program_sha256);

CREATE OR REPLACE VIEW runs_latest AS
SELECT * FROM runs
QUALIFY recency = min(recency) OVER (PARTITION BY row_id);

-- The latest GPU run of each row (a result that names no device is an older GPU one): its timing is the row's
-- measured time. A run on the CPU interpreter is a correctness check; it never replaces this timing.
CREATE OR REPLACE VIEW runs_latest_gpu AS
SELECT * FROM runs
WHERE device IS DISTINCT FROM (SELECT cpu_label FROM outcome_labels)
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

-- refuted: the row is not correct by its latest verdict, and so leaves every ranking of correct rows. Its latest
-- run failed on a GPU; or failed on the CPU interpreter for a reason no device changes (`outcomes`'
-- device_independent: syntax, import, construction, ...); or passed or failed on the interpreter for a reason the
-- interpreter can cause, and its latest GPU run failed.
UPDATE programs SET refuted = false WHERE refuted;
UPDATE programs SET refuted = true
FROM (SELECT l.row_id
      FROM runs_latest l
      LEFT JOIN runs_latest_gpu g ON g.row_id = l.row_id
      WHERE CASE WHEN l.device IS DISTINCT FROM (SELECT cpu_label FROM outcome_labels) THEN l.status <> 'ok'
                 WHEN l.status <> 'ok' AND l.error_type IN (SELECT error_type FROM outcomes WHERE device_independent)
                     THEN true
                 ELSE coalesce(g.status <> 'ok', false) END) f
WHERE programs.id = f.row_id;
