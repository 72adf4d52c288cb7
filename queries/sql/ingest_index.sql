-- Ingest, end of stage 1: the index from the per-row fields (`rows`) and the reference found in each distinct
-- text before the cut (`refs`); rows without a problem id get the most common (problem id, holdout group) of
-- their problem key (ties: smallest id, then group), and the level its id starts with. `forward_arity_mismatch`
-- replaces the errors it outranks ($outranked_by_arity: `ok_static`) where no argument count suits both forward
-- signatures (fewest/most positional arguments; max -1: no bound; null: not known, no finding). `static_flags` stay null (not checked) until stage 2.
-- Sorted by id.
WITH keyed AS MATERIALIZED (  -- `rows` is a stream, read once
    SELECT r.*, f.ref_chars, f.problem_key, f.title, f.ref_forward_min, f.ref_forward_max
    FROM rows r JOIN refs f USING (ref_hash, cut_chars)
), votes AS (
    SELECT problem_key, problem_id, holdout_group, count(*) AS n
    FROM keyed WHERE problem_id IS NOT NULL
    GROUP BY ALL
), best AS (
    SELECT problem_key, problem_id AS best_id, holdout_group AS best_group
    FROM votes
    QUALIFY row_number() OVER (PARTITION BY problem_key
                               ORDER BY n DESC, problem_id, coalesce(holdout_group, '')) = 1
), mapped AS (
    SELECT k.*,
           CASE WHEN k.problem_id IS NULL THEN b.best_id ELSE k.problem_id END AS mapped_id,
           CASE WHEN k.problem_id IS NULL THEN b.best_group ELSE k.holdout_group END AS mapped_group
    FROM keyed k LEFT JOIN best b USING (problem_key)
)
SELECT id, split, row, source_file, problem_key,
       mapped_id AS problem_id, mapped_group AS holdout_group,
       nullif(title, '') AS title,
       TRY_CAST(regexp_extract(mapped_id, '^(\d+)_', 1) AS INTEGER) AS level,
       y, y IS NOT NULL AS ok,
       CASE WHEN list_contains($outranked_by_arity, static_error)  -- common.checks.outranked_by
                 AND ((ref_forward_max >= 0 AND ref_forward_max < new_forward_min)
                      OR (new_forward_max >= 0 AND new_forward_max < ref_forward_min))
            THEN 'forward_arity_mismatch' ELSE static_error END AS static_error,
       'text' AS parse_mode, NULL::VARCHAR[] AS static_flags,
       len(kernel_names) AS n_kernels, kernel_names, autotuned, candidate_key,
       n_chars, ref_chars, n_chars - ref_chars AS cand_chars, program_sha256, code_shard, code_rg,
       NULL::VARCHAR AS near_dup_cluster, NULL::VARCHAR AS near_dup_component
FROM mapped
ORDER BY id
