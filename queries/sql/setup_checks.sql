-- At connect: common/checks.py's table of checks and flags (name, kind, label, meaning, hack), for the filters and
-- the console.
CREATE TABLE checks AS SELECT * FROM checks_arrow;
