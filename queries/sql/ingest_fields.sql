-- Ingest, stage 1: the index fields of every row of `src` (file_row, x, y, problem_id, holdout_group) by text
-- rules alone; the patterns are bound from common/program/text_rules.py, which says what each one means. Rows whose x
-- is null or blank come out with `reject` set. Python finishes each row (queries/ingest/fields_scan.py): the program's
-- sha256, the candidate key and `ModelNew.forward`'s signature from the text past `cut_bytes`, `unavailable_import`
-- from the top-level packages `imported`; and the problem key, title and `Model.forward`'s signature once per
-- distinct text before the cut (`ref_hash`, `cut_chars`).
WITH named AS (
    SELECT file_row,
           printf($row_id_format, $split, $first_row + file_row) AS id,  -- common/row_id.py
           $split AS split,
           $first_row + file_row AS row,
           $source_file AS source_file,
           x,
           CASE WHEN isnan(y::DOUBLE) THEN NULL ELSE y::DOUBLE END AS y,
           problem_id::VARCHAR AS problem_id,
           holdout_group::VARCHAR AS holdout_group,
           CASE WHEN x IS NULL THEN 'null_program'
                WHEN NOT regexp_matches(x, $not_blank) THEN 'empty_program' END AS reject
    FROM src
), after_model AS (
    SELECT *, regexp_extract(x, $cut_after_model, 0) AS upto_after_model
    FROM named
), cut AS (
    -- CASE, not coalesce: the second pattern runs only where the first finds nothing
    SELECT *,
           CASE WHEN upto_after_model <> '' THEN upto_after_model
                ELSE nullif(regexp_extract(x, $cut_anywhere, 0), '') END AS upto_start
    FROM after_model
), parts AS (
    SELECT *,
           CASE WHEN upto_start IS NULL THEN x
                ELSE regexp_replace(upto_start, $start_token_at_end, '') END AS before_cut,
           list_transform(regexp_extract_all(x, $kernel_match, 0),
                          lambda m: regexp_extract(m, $last_word, 0)) AS kernel_names
    FROM cut
), checked AS (
    -- the static errors found; the first in $static_errors' order (common/checks.py's table) is the row's
    SELECT *,
           [CASE WHEN NOT (regexp_matches(x, $model_new_line) OR regexp_matches(x, $model_new_start))
                 THEN 'no_model_new' END,
            CASE WHEN NOT (regexp_matches(x, $model_line) OR regexp_matches(x, $model_start)) THEN 'no_reference' END,
            CASE WHEN NOT ((regexp_matches(x, $get_inputs_line) OR regexp_matches(x, $get_inputs_start))
                           AND (regexp_matches(x, $get_init_inputs_line) OR regexp_matches(x, $get_init_inputs_start)))
                 THEN 'no_get_inputs' END,
            CASE WHEN len(kernel_names) = 0 THEN 'no_triton_kernel' END,
            'ok_static'] AS static_found
    FROM parts
)
SELECT file_row, id, split, row, source_file, reject, x, y, problem_id, holdout_group,
       length(x) AS n_chars,
       length(before_cut) AS cut_chars,
       strlen(before_cut) AS cut_bytes,
       hash(before_cut) AS ref_hash,
       kernel_names,
       len(kernel_names) > 0 AND regexp_matches(x, $autotune) AS autotuned,
       list_filter($static_errors, lambda name: list_contains(static_found, name))[1] AS static_error,
       list_concat(regexp_extract_all(x, $import_start, 1), regexp_extract_all(x, $import_line, 1)) AS imported
FROM checked
