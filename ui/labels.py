"""Names shown for stored codes: error types and flags as a reader says them (the data keeps the codes of design
§3). Static codes and every flag take their label and meaning from the one table, common/checks.py."""

from __future__ import annotations

from common import checks

# Cause codes that are verdicts, not error types: a re-run that passed; a CPU triage that passed (design §3).
MEASURED_NAMES = {"ok": "passed on re-run", "passed": "passed CPU triage (the rest needs a GPU)",
                  "not_triaged": "not triaged"}


def error_name(error_type: str | None) -> str:
    """How the UI names an error type (`ok_static` is not an error: nothing was found without running)."""
    if error_type is None:
        return "—"
    if error_type in MEASURED_NAMES:
        return MEASURED_NAMES[error_type]
    check = checks.BY_NAME.get(error_type)
    return check.label if check is not None and check.kind == "static_error" else error_type


def flag_label(code: str) -> str:
    """How the UI names a flag (`state_loaded:2/2` -> "reference state loaded (2/2)")."""
    return checks.label(code)


def flag_help(code: str) -> str:
    """A flag's or static code's one-line meaning, for tooltips and legends."""
    return checks.meaning(code)


def flags_text(flags) -> str:
    """A list of stored flags as labels, or "none"; None (static checks not run) as "not checked"."""
    if flags is None:
        return "not checked"
    return ", ".join(flag_label(f) for f in flags) or "none"


def plural(n: int, one: str, many: str | None = None) -> str:
    """`1 problem`, `2 problems` (thousands separated)."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def latest_status(status: str | None, error_type: str | None) -> str:
    """A row's latest re-run verdict in words (`never re-run` without one)."""
    if not isinstance(status, str):
        return "never re-run"
    return "correct" if status == "ok" else f"failed: {error_name(error_type if isinstance(error_type, str) else None)}"
