-- At connect: which source a failed row's cause rests on, and how the pages say it (design §3: a failed row is
-- counted once, by its most trusted cause: measured (the latest GPU run) > triaged > static).
-- cause_source: `measured` where the row was re-run; else `triaged` where its latest CPU triage passed or failed
-- (`not_triaged` gave no answer); else `static`. An error-source filter (`f_source`) counts every row by that
-- source instead (its filter keeps only rows that have one).
CREATE MACRO cause_source(f_source, measured_status, triage_status) AS
    CASE
        WHEN f_source IS NOT NULL THEN f_source
        WHEN measured_status IS NOT NULL THEN 'measured'
        WHEN triage_status IN ('passed', 'failed') THEN 'triaged'
        ELSE 'static'
    END;

-- The cause itself, by that source: a measured or triage error type, `ok` (a re-run passed) / `passed` (triage
-- passed: the rest needs a GPU), or the static finding (`ok_static` = nothing found).
CREATE MACRO cause_error(source, static_error, measured_status, measured_error, triage_status, triage_error) AS
    CASE source
        WHEN 'measured' THEN coalesce(measured_error, measured_status)
        WHEN 'triaged' THEN coalesce(triage_error, triage_status)
        ELSE static_error
    END;

-- What a cause rests on, in words: "measured on NVIDIA H100 80GB HBM3", "triaged on CPU (torch 2.13.0, sm_90)"
-- (a triage is never called measured, nor said to have failed on a GPU), "static". `triage_basis` is kept on each
-- triaged row (`programs.triage_basis`, setup_triage.sql), so counting causes needs no join with the triage.
CREATE MACRO triage_basis(torch, target) AS
    'triaged on CPU (torch ' || coalesce(torch, 'unknown') || ', ' || coalesce(target, 'unknown target') || ')';

CREATE MACRO cause_basis(source, gpu, device, triaged_basis) AS
    CASE source
        WHEN 'measured' THEN 'measured on ' || CASE WHEN device = 'cuda' THEN coalesce(gpu, 'a GPU')
                                                    ELSE 'CPU (Triton interpreter)' END
        WHEN 'triaged' THEN triaged_basis
        ELSE 'static'
    END;
