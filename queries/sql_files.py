"""The project's SQL, one named file per statement in `queries/sql/`, read once: `sql_text(name)`.

Shared by the read side (`queries/db.py`) and ingest (`queries/ingest/`), which is why it lives apart from both.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

SQL_DIR = Path(__file__).resolve().parent / "sql"


@cache
def sql_text(sql_name: str) -> str:
    """The text of `queries/sql/<sql_name>.sql` (names are fixed identifiers, never user input)."""
    if not sql_name.replace("_", "").isalnum():
        raise ValueError(f"bad SQL name {sql_name!r}")
    path = SQL_DIR / f"{sql_name}.sql"
    if not path.is_file():
        raise ValueError(f"no SQL file {path}")
    return path.read_text(encoding="utf-8")
