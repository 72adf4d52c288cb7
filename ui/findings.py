"""A row's static finding with what it found: the packages behind `unavailable_import`, Python's message and line
behind `syntax_error` (recomputed from the program text: common/program/findings.py), and why such a row can
carry a label."""

from __future__ import annotations

import math

import streamlit as st

from common.program.findings import compile_error, unavailable_imports
from ui.text import md, md_code

LABEL_DESPITE_IMPORT = ("The row carries a label all the same: the dataset's labels were measured where this "
                        "package was installed. The runner's environment lacks it, so a re-run here fails at "
                        "import.")


def _labelled(y) -> bool:
    return y is not None and not (isinstance(y, float) and math.isnan(y))


def detail(static_error: str | None, program: str, y) -> str | None:
    """One Markdown sentence on what the finding found, None for findings that need none."""
    if static_error == "unavailable_import":
        names = unavailable_imports(program)
        found = ", ".join(md_code(n) for n in names) if names else "a package"
        text = f"It imports {found} at top level, which the runner's environment (Python, torch, triton, numpy) lacks."
        return text + (" " + LABEL_DESPITE_IMPORT if _labelled(y) else "")
    if static_error == "syntax_error":
        error = compile_error(program)
        if error is None:  # the store was checked by another Python than this one
            return "This Python compiles it: the store's syntax check ran under another Python version."
        where = f" (line {error.line})" if error.line else ""
        return f"Python: {md_code(error.message)}{where}, a {md(error.exception)}."
    return None


def show(static_error: str | None, program: str, y) -> None:
    text = detail(static_error, program, y)
    if text:
        st.caption(text)
