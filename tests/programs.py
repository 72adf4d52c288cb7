"""Test programs built from parts: `program_base.py` (a reference `Model` adding two vectors, its inputs and a
correct Triton add) followed by a file of `tests/hostile_programs/` or `tests/runner_programs/` that adds the
candidate (and whatever it changes). A file that defines `get_inputs` itself is a whole program already."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
BASE = (HERE / "program_base.py").read_text()
HOSTILE = HERE / "hostile_programs"
RUNNER = HERE / "runner_programs"
NAMES = sorted(p.stem for p in HOSTILE.glob("*.py"))


def whole_program(path: Path) -> str:
    text = path.read_text()
    return text if "\ndef get_inputs(" in text else BASE + "\n\n" + text


def hostile_program(name: str) -> str:
    return whole_program(HOSTILE / f"{name}.py")


def runner_program(name: str) -> str:
    return whole_program(RUNNER / f"{name}.py")
