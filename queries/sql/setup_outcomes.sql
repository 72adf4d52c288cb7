-- At connect: common/outcomes.py's measured error types, each with whether a failure of that type holds on any
-- device (DEVICE_INDEPENDENT), and common/hardware.py's device label of a CPU interpreter run, for setup_runs.sql.
CREATE TABLE outcomes AS SELECT * FROM outcomes_arrow;
CREATE TABLE outcome_labels AS SELECT * FROM outcome_labels_arrow;
