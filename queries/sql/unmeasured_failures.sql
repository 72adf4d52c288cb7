-- Filtered rows whose label is empty and that were never re-run: what a bulk re-run would add measured causes to.
SELECT id FROM filtered(
    $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR,
    $f_level::INTEGER, $f_flag::VARCHAR, $f_triage::VARCHAR, $f_triage_error::VARCHAR)
WHERE NOT ok AND measured_status IS NULL
ORDER BY id;
