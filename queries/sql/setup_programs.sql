-- At connect: the index as an in-memory table (unsorted: sorting 601k rows costs seconds at connect and saves
-- a few ms per problem); measured_status / measured_error / measured_flags / triton_share hold each row's latest
-- run verdict, run_flags that run's flags by entry name, and flagged whether the row's static flags or run_flags
-- hold a hack flag (setup_row_flags.sql, setup_runs.sql); refuted whether its latest verdict says it is not correct
-- on a GPU (setup_runs.sql: it leaves every ranking of correct rows); triage_status / triage_error / triage_basis
-- the row's latest CPU triage and what it rests on (setup_triage.sql).
CREATE TABLE programs AS
SELECT *, NULL::VARCHAR AS measured_status, NULL::VARCHAR AS measured_error, NULL::VARCHAR[] AS measured_flags,
       NULL::DOUBLE AS triton_share, NULL::VARCHAR[] AS run_flags, false AS flagged, false AS refuted,
       NULL::VARCHAR AS triage_status, NULL::VARCHAR AS triage_error, NULL::VARCHAR AS triage_basis
FROM read_parquet($index_path);
