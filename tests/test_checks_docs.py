"""The docs name every check and flag of common/checks.py, with its kind and `hack`, and none the table lacks;
and what the code spells as flags is in the table."""

from __future__ import annotations

import re
from pathlib import Path

from common.checks import BY_NAME, CHECKS, base_name, label, lookup, meaning

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"static error": "static_error", "static flag": "static_flag", "run flag": "run_flag"}
ROW = re.compile(r"^\| `([a-z0-9_]+)` \| ([a-z ]+) \| (yes|no) \| ")


def documented() -> dict[str, tuple[str, bool]]:
    rows = [ROW.match(line) for line in (ROOT / "docs" / "checks.md").read_text().splitlines()]
    return {m.group(1): (KINDS[m.group(2)], m.group(3) == "yes") for m in rows if m}


def test_docs_table_matches_the_checks_table():
    assert documented() == {c.name: (c.kind, c.hack) for c in CHECKS}


def test_readme_and_architecture_point_to_the_checks_page():
    for doc in ("README.md", "docs/ARCHITECTURE.md"):
        assert "docs/checks.md" in (ROOT / doc).read_text() or "checks.md" in (ROOT / doc).read_text(), doc


def test_every_flag_the_runner_spells_is_in_the_table():
    # string literals appended as flags in runner/ (the lead's files are read, not edited here)
    spelled = set()
    for path in (ROOT / "runner").rglob("*.py"):
        text = path.read_text()
        spelled |= set(re.findall(r"flags\.append\(\s*f?\"([a-z_]+)", text))
        spelled |= set(re.findall(r"flags=\[\"([a-z_]+)\"\]", text))
        spelled |= set(re.findall(r"_FLAG = \"([a-z_]+)\"", text))
        spelled |= set(re.findall(r"return \[\"([a-z_]+)\"\]", text))
    assert spelled and spelled <= set(BY_NAME), sorted(spelled - set(BY_NAME))


def test_flags_with_values_and_the_reference_prefix():
    assert base_name("state_loaded:2/2") == "state_loaded" and label("state_loaded:2/2").endswith("(2/2)")
    assert base_name("refused: socket.connect AF_INET") == "refused"
    assert lookup("ref_launch_bound").name == "launch_bound" and label("ref_launch_bound").startswith("reference: ")
    assert meaning("ref_launch_bound").startswith("About the reference")
    assert lookup("not_a_flag") is None and meaning("not_a_flag") == "not a code this version knows"
    assert "review, not reject" in meaning("no_triton_launch") and "review" not in meaning("launch_bound")


def test_ingest_spells_only_static_errors_of_the_table():
    # the SQL of stage 1 cannot import the table: the codes it writes into static_error are held to it here
    from common.checks import STATIC_ERRORS

    sql = (ROOT / "queries" / "sql" / "ingest_fields.sql").read_text()
    written = set(re.findall(r"THEN '([a-z_]+)'", sql.split("AS reject", 1)[1]))
    written |= set(re.findall(r"'([a-z_]+)'\] AS static_found", sql))
    written |= set(re.findall(r"THEN '([a-z_]+)'", (ROOT / "queries" / "sql" / "ingest_index.sql").read_text()))
    written |= set(re.findall(r'"(unavailable_import)"', (ROOT / "queries" / "ingest" / "fields_scan.py").read_text()))
    assert written == set(STATIC_ERRORS) - {"syntax_error"}, written


def test_the_order_of_static_errors_is_the_tables(monkeypatch):
    """Which static error a row gets when several apply follows `STATIC_ERRORS`, in ingest's SQL, its later
    stages and parsing: reversing the table's order reverses the answer (the SQL used to spell its own order)."""
    import duckdb

    from common import checks
    from common.program import parse
    from queries.ingest import fields_scan
    from queries.ingest.read import Batch

    program = "import torch\n\ndef get_inputs():\n    return []\n"  # no ModelNew, no Model, no kernel
    batch = Batch(Path("train.parquet"), "train", 0, 0, [program], [None], [None], [None])

    def answers() -> tuple[str, str]:
        con = duckdb.connect()
        try:
            sql = fields_scan.scan_decoded(con, batch, 0)[0].column("static_error")[0].as_py()
        finally:
            con.close()
        return sql, parse.parse_program(program).static_error

    assert answers() == ("no_model_new", "no_model_new")
    reversed_order = tuple(reversed(checks.STATIC_ERRORS[:-1])) + (checks.NO_STATIC_ERROR,)
    monkeypatch.setattr(checks, "STATIC_ERRORS", reversed_order)
    monkeypatch.setattr(fields_scan, "STATIC_ERRORS", reversed_order)
    assert answers() == ("no_triton_kernel", "no_triton_kernel")
    assert checks.outranked_by("unavailable_import")[:2] == ("no_get_inputs", "no_reference")
