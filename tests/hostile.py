"""The hostile programs of `tests/hostile_programs/`: each file, appended to `_base.py`, makes one whole program."""

from __future__ import annotations

from pathlib import Path

DIR = Path(__file__).parent / "hostile_programs"
BASE = (DIR / "_base.py").read_text()
NAMES = sorted(p.stem for p in DIR.glob("*.py") if not p.name.startswith("_"))


def hostile_program(name: str) -> str:
    return BASE + "\n\n" + (DIR / f"{name}.py").read_text()
