-- At connect: the index as an in-memory table (unsorted: sorting 601k rows costs seconds at connect and saves
-- a few ms per problem); measured_status / measured_error hold each row's latest run verdict (setup_runs.sql).
CREATE TABLE programs AS
SELECT *, NULL::VARCHAR AS measured_status, NULL::VARCHAR AS measured_error
FROM read_parquet($index_path);
