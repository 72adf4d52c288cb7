"""What a row's static finding found, recomputed from its program text for the row's page (cheap, so no store
column holds it): the packages behind `unavailable_import` (ingest's text rule, common/program/text_rules.py) and
Python's message and line behind `syntax_error` (ingest's second stage compiles the whole text the same way).
Compiling runs nothing of the program. Standard library only."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from common.program.text_rules import AVAILABLE_MODULES, python_regex

_IMPORT_START = python_regex("import_start")
_IMPORT_LINE = python_regex("import_line")
_AVAILABLE = frozenset(AVAILABLE_MODULES)


@dataclass(frozen=True)
class CompileError:
    message: str  # Python's own, e.g. "keyword argument repeated: stride"
    line: int | None
    exception: str  # SyntaxError, IndentationError, RecursionError, ...


def unavailable_imports(x: str) -> list[str]:
    """The top-level packages `x` imports unguarded that the runner's environment lacks, in order of first import:
    the packages that make ingest mark a row `unavailable_import`."""
    found = [m.group(1) for m in _IMPORT_START.finditer(x)] + [m.group(1) for m in _IMPORT_LINE.finditer(x)]
    return [name for name in dict.fromkeys(found) if name not in _AVAILABLE]


def compile_error(x: str) -> CompileError | None:
    """Why Python cannot compile `x` (as ingest's syntax check compiles it), or None when it compiles."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning and the like
            compile(x, "<program>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return CompileError(exc.msg or str(exc), exc.lineno, type(exc).__name__)
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return CompileError(str(exc) or type(exc).__name__, None, type(exc).__name__)
    return None
