-- Ingest, stage 1: the index fields of every row of `src` (file_row, x, y, problem_id, holdout_group) by text
-- rules alone (`program_sha256`: hex sha256 of x's UTF-8 bytes, as the runner's results name a program); the patterns are bound from queries/text_rules.py, which says what each one means. Rows whose x
-- is null or blank come out with `reject` set. Python finishes each row: the candidate key from `code_parts` (x
-- split around its comments) past `code_skip` bytes (`code_quotes`: the candidate holds triple quotes), and the
-- problem key and title once per distinct text before the cut (`ref_hash`, `cut_chars`).
WITH named AS (
    SELECT file_row,
           printf('%s/%06d', $split, $first_row + file_row) AS id,
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
), cut AS (
    SELECT *,
           coalesce(nullif(regexp_extract(x, $cut_after_model, 0), ''),
                    nullif(regexp_extract(x, $cut_anywhere, 0), '')) AS upto_start
    FROM named
), parts AS (
    SELECT *,
           CASE WHEN upto_start IS NULL THEN x
                ELSE regexp_replace(upto_start, $start_token_at_end, '') END AS before_cut,
           regexp_extract_all(x, $kernel, 1) AS kernel_names
    FROM cut
)
SELECT file_row, id, split, row, source_file, reject, x, y, problem_id, holdout_group,
       length(x) AS n_chars,
       sha256(x) AS program_sha256,
       length(before_cut) AS cut_chars,
       hash(before_cut) AS ref_hash,
       string_split_regex(x, $comment) AS code_parts,
       strlen(array_to_string(string_split_regex(before_cut, $comment), '')) AS code_skip,
       len(string_split(x, '"""')) + len(string_split(x, ''''''''))
           > len(string_split(before_cut, '"""')) + len(string_split(before_cut, ''''''''))
           AS code_quotes,
       kernel_names,
       len(kernel_names) > 0 AND regexp_matches(x, $autotune) AS autotuned,
       CASE WHEN NOT (regexp_matches(x, $model_new_line) OR regexp_matches(x, $model_new_start)) THEN 'no_model_new'
            WHEN NOT (regexp_matches(x, $model_line) OR regexp_matches(x, $model_start)) THEN 'no_reference'
            WHEN NOT ((regexp_matches(x, $get_inputs_line) OR regexp_matches(x, $get_inputs_start))
                      AND (regexp_matches(x, $get_init_inputs_line) OR regexp_matches(x, $get_init_inputs_start)))
                THEN 'no_get_inputs'
            WHEN len(kernel_names) = 0 THEN 'no_triton_kernel'
            ELSE 'ok_static' END AS static_error
FROM parts
