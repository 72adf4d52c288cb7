"""Names shown for stored codes: error types as a reader says them (the data keeps the codes of design §3)."""

from __future__ import annotations

ERROR_NAMES = {
    "ok_static": "no static finding",
    "unavailable_import": "imports a package the runner lacks",
    "forward_arity_mismatch": "forward() arguments differ from Model's",
    "ok": "passed on re-run",
}


def error_name(error_type: str | None) -> str:
    """How the UI names an error type (`ok_static` is not an error: nothing was found without running)."""
    if error_type is None:
        return "—"
    return ERROR_NAMES.get(error_type, error_type)


def plural(n: int, one: str, many: str | None = None) -> str:
    """`1 problem`, `2 problems` (thousands separated)."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def latest_status(status: str | None, error_type: str | None) -> str:
    """A row's latest re-run verdict in words (`never re-run` without one)."""
    if not isinstance(status, str):
        return "never re-run"
    return "correct" if status == "ok" else f"failed: {error_name(error_type if isinstance(error_type, str) else None)}"
