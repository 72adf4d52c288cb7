"""The house rules of docs/ARCHITECTURE.md, kept by tests.

Imports (every `import` of every module of common/, queries/, runner/, ui/, pages/, at module level and inside
functions, `TYPE_CHECKING` blocks included, read with `ast`):
- no circle between modules;
- `common` imports the standard library and `common` only;
- `queries` imports nothing of `runner`, `ui` or `pages`; `runner` nothing of `ui` or `pages`;
- `runner` imports `queries` in one module, `runner/rows.py`;
- `pages` import no `runner` module and no `queries.ingest` (the runner is reached through `ui`'s panels, the
  sample store is built by `ui.context`); `ui` imports of `runner` only `runner.service.client` and
  `runner.profiles`;
- the runner's wings: `child` imports no `sandbox`, `gpu`, `service` or `bulk` module but the gate, `sandbox` and `gpu` no `service` or
  `bulk`, and `service` and `bulk` not each other.

Settings: `common.settings.load_settings()` is called only at a process's entry (`SETTINGS_ENTRIES`: the
explorer's session, each command's main, a console worker's main), never at import and never deeper: everything
below takes the `Settings` as a parameter.

Docs, in the manner of datasette's: every `TLX_*` variable the code reads and every subcommand of
`python -m queries` / `python -m runner` is named in README.md or docs/, and the docs name none the code lacks.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("common", "queries", "runner", "ui", "pages")
RUNNER_DOOR_TO_QUERIES = "runner.rows"
UI_DOORS_TO_RUNNER = ("runner.service.client", "runner.profiles")  # the client, and the profiles offered
CHILD_REACHES_INTO_GPU = {"runner.gpu.gate"}  # the gate's child side (`ChildGate`) lives beside the parent's
# runner wing -> the wings it may not import: the child stands alone, the sandbox and GPU scheduling serve the
# service and bulk
WING_BARRIERS = {
    "runner.child": ("runner.sandbox", "runner.gpu", "runner.service", "runner.bulk", "runner.triage"),
    "runner.sandbox": ("runner.service", "runner.bulk"),
    "runner.gpu": ("runner.service", "runner.bulk"),
    "runner.service": ("runner.bulk",),
    "runner.bulk": ("runner.service", "runner.triage"),
    "runner.triage": ("runner.service",),
}


# (module, function) where a process reads its settings, once; everything below them takes `Settings` passed down
SETTINGS_ENTRIES = {
    ("ui.context", "settings"),  # the explorer: once per browser session, kept in it
    ("queries.__main__", "main"),  # python -m queries
    ("queries.console.child", "main"),  # a SQL-console worker process
    ("runner.__main__", "eval_main"),  # python -m runner eval
    ("runner.service.app", "main"),  # serve
    ("runner.service.client", "main"),  # submit
    ("runner.bulk.command", "main"),
    ("runner.triage.command", "main"),
}


def module_names(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under the packages (a package's `__init__` is the package)."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imports_of(name: str, path: Path) -> list[tuple[str, str | None]]:
    """Every import in the file of module `name`: (module, None) for `import module`, (module, name) for
    `from module import name` (relative ones made absolute)."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's package
                parts = name.split(".")
                base = parts[: len(parts) - node.level + is_package]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found += [(target, alias.name) for alias in node.names]
    return found


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(module -> the project modules it imports, module -> the top-level names of everything it imports)."""
    modules = module_names(root, packages)
    graph, tops = {}, {}
    for name, path in modules.items():
        found = imports_of(name, path)
        tops[name] = {target.split(".")[0] for target, _ in found if target}
        graph[name] = set()
        for target, member in found:
            if member is not None and f"{target}.{member}" in modules:  # `from runner.child import timing`
                target = f"{target}.{member}"
            while target and target not in modules:  # `from a.b import function`: the module a.b
                target = target.rpartition(".")[0]
            if target and target != name:
                graph[name].add(target)
    return graph, tops


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def violations(graph: dict[str, set[str]], tops: dict[str, set[str]]) -> list[str]:
    """Imports that break the layering rules (the module docstring's list), as readable lines."""
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    bad = []
    for module, targets in sorted(graph.items()):
        wing = module.split(".")[0]
        if wing == "common":
            bad += [f"{module} imports {top} (common: stdlib only)" for top in sorted(tops[module] - stdlib - {"common"})]
        for target in sorted(targets):
            side = target.split(".")[0]
            if wing in ("common", "queries", "runner") and side in ("ui", "pages"):
                bad.append(f"{module} imports {target} (the read side and the runner never import the UI)")
            if wing == "queries" and side == "runner":
                bad.append(f"{module} imports {target} (queries never imports runner)")
            if wing == "pages" and (side == "runner" or target.startswith("queries.ingest")):
                bad.append(f"{module} imports {target} (pages import no runner module and no queries.ingest)")
            if wing == "ui" and side == "runner" and target not in UI_DOORS_TO_RUNNER:
                bad.append(f"{module} imports {target} (ui imports of runner only {', '.join(UI_DOORS_TO_RUNNER)})")
            if wing == "runner" and side == "queries" and module != RUNNER_DOOR_TO_QUERIES:
                bad.append(f"{module} imports {target} (runner imports queries only in {RUNNER_DOOR_TO_QUERIES})")
            room = ".".join(module.split(".")[:2])
            barred = WING_BARRIERS.get(room, ())
            if target.startswith(barred) and not (room == "runner.child" and target in CHILD_REACHES_INTO_GPU):
                bad.append(f"{module} imports {target} ({room} may not import {', '.join(barred)})")
    return bad


def _calls_of(node: ast.AST, names: set[str], where: tuple[str, ...] = ()) -> set[str]:
    """Where under `node` a function named one of `names` (or `<anything>.load_settings`) is called: the dotted
    classes and functions around each call, "<module>" at import."""
    found = set()
    for child in ast.iter_child_nodes(node):
        inner = (*where, child.name) if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) else where
        func = child.func if isinstance(child, ast.Call) else None
        if (isinstance(func, ast.Name) and func.id in names) or (isinstance(func, ast.Attribute)
                                                                and func.attr == "load_settings"):
            found.add(".".join(where) or "<module>")
        found |= _calls_of(child, names, inner)
    return found


def settings_reads(root: Path, packages: tuple[str, ...] = PACKAGES) -> set[tuple[str, str]]:
    """(module, where) of every call of `load_settings` in the packages and app.py, under whatever name it was
    imported (`_calls_of`)."""
    files = dict(module_names(root, packages), **({"app": root / "app.py"} if (root / "app.py").is_file() else {}))
    found = set()
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        aliases = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   for alias in node.names if alias.name == "load_settings"}
        found |= {(name, where) for where in _calls_of(tree, aliases)}
    return found


def test_no_import_circles():
    graph, _ = import_graph(ROOT)
    assert len(graph) > 80, "the walk found too few modules"
    assert cycles(graph) == []


def test_imports_follow_the_layers():
    assert violations(*import_graph(ROOT)) == []


def test_the_checks_catch_what_they_are_for(tmp_path):
    """The graph sees function-level, TYPE_CHECKING and relative imports; each rule fires on a breach."""
    files = {
        "common/__init__.py": "",
        "common/a.py": "import json\nimport pyarrow\n",
        "queries/__init__.py": "",
        "queries/q.py": "def f():\n    from runner.r import g\n",
        "runner/__init__.py": "",
        "runner/r.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .s import S\ndef g():\n"
                       "    import queries.q\n",
        "runner/s.py": "from runner import r\n",
        "runner/child/__init__.py": "", "runner/child/c.py": "from runner.gpu import gate\nfrom runner.sandbox import run\n",
        "runner/gpu/__init__.py": "", "runner/gpu/gate.py": "", "runner/sandbox/__init__.py": "", "runner/sandbox/run.py": "",
        "runner/rows.py": "from queries import q\n",
        "ui/__init__.py": "", "pages/__init__.py": "",
        "pages/p.py": "from runner.r import g\nfrom queries.ingest import build\n",
        "queries/ingest/__init__.py": "", "queries/ingest/build.py": "",
        "ui/u.py": "from runner.service.client import C\nfrom runner.r import g\n",
        "runner/service/__init__.py": "", "runner/service/client.py": "",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    graph, tops = import_graph(tmp_path)
    assert graph["runner.r"] == {"runner.s", "queries.q"} and graph["runner.s"] == {"runner.r"}
    assert sorted(cycles(graph)) == [["queries.q", "runner.r", "runner.s"]]
    assert violations(graph, tops) == [
        "common.a imports pyarrow (common: stdlib only)",
        "pages.p imports queries.ingest.build (pages import no runner module and no queries.ingest)",
        "pages.p imports runner.r (pages import no runner module and no queries.ingest)",
        "queries.q imports runner.r (queries never imports runner)",
        "runner.child.c imports runner.sandbox.run (runner.child may not import runner.sandbox, runner.gpu, "
        "runner.service, runner.bulk, runner.triage)",
        "runner.r imports queries.q (runner imports queries only in runner.rows)",
        "ui.u imports runner.r (ui imports of runner only runner.service.client, runner.profiles)",
    ]


def test_settings_are_read_at_the_entry_points_only():
    reads = settings_reads(ROOT)
    assert sorted(reads - SETTINGS_ENTRIES) == [], "settings read below an entry point: pass them down instead"
    assert sorted(SETTINGS_ENTRIES - reads) == [], "an entry point listed that no longer reads the settings"


def test_the_settings_check_catches_a_deep_read(tmp_path):
    files = {
        "queries/__init__.py": "", "queries/__main__.py": "from common.settings import load_settings\n"
                                                         "def main():\n    settings = load_settings()\n",
        "queries/db.py": "from common.settings import load_settings as read\ndef connect(store, settings=None):\n"
                         "    settings = settings or read()\n",
        "queries/index.py": "import common.settings\nCACHE = common.settings.load_settings().search_cache_mb\n",
        "ui/__init__.py": "", "ui/panel.py": "class Panel:\n    def show(self):\n"
                                             "        from common.settings import load_settings\n        load_settings()\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert settings_reads(tmp_path, ("queries", "ui")) - SETTINGS_ENTRIES == {
        ("queries.db", "connect"), ("queries.index", "<module>"), ("ui.panel", "Panel.show")}


# -- docs ------------------------------------------------------------------------------------------------------
TLX_VARIABLE = re.compile(r"\bTLX_[A-Z0-9]+(?:_[A-Z0-9]+)*\b(?!_)")  # not a prefix such as `TLX_RUNNER_*`
COMMAND_IN_DOCS = re.compile(r"python -m (queries|runner) ([a-z][a-z0-9-]*)")


def docs_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])


def code_files() -> list[Path]:
    """What reads the environment: the packages, the app, scripts and the container's files (not the tests)."""
    files = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")]
    files += [ROOT / "app.py", ROOT / "Dockerfile", *(ROOT / "scripts").glob("*.py"), *(ROOT / "scripts").glob("*.sh")]
    return [p for p in files if p.is_file()]


def subcommands(package: str) -> set[str]:
    """The subcommands `python -m <package> --help` lists."""
    out = subprocess.run([sys.executable, "-m", package, "--help"], capture_output=True, text=True, cwd=ROOT,
                         timeout=120, check=True).stdout
    match = re.search(r"\{([a-z0-9,-]+)\}", out)
    assert match, f"no subcommands in `python -m {package} --help`:\n{out}"
    return set(match.group(1).split(","))


def test_every_tlx_variable_is_documented_and_no_other():
    in_code = {m for p in code_files() for m in TLX_VARIABLE.findall(p.read_text(encoding="utf-8"))}
    in_docs = set(TLX_VARIABLE.findall(docs_text()))
    assert len(in_code) > 10, "the scan found too few variables"
    assert sorted(in_code - in_docs) == [], "read by the code, named in no doc"
    assert sorted(in_docs - in_code) == [], "named in the docs, read by no code"


@pytest.mark.parametrize("package", ["queries", "runner"])
def test_every_cli_subcommand_is_documented_and_no_other(package):
    in_docs = {command for pkg, command in COMMAND_IN_DOCS.findall(docs_text()) if pkg == package}
    in_code = subcommands(package)
    assert sorted(in_code - in_docs) == [], f"`python -m {package}` commands no doc names"
    assert sorted(in_docs - in_code) == [], f"`python -m {package}` commands the docs name that do not exist"


LAYOUT_ROW = re.compile(r"^\| `([a-z_/]+/)`(?: \(top\))? \| [^|]* \| (.*) \|$")


def layout_rows() -> dict[str, str]:
    """docs/ARCHITECTURE.md's layout table: folder -> its job column."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = text.split("\n## Layout\n", 1)[1].split("\n#", 1)[0]
    return {m.group(1): m.group(2) for m in map(LAYOUT_ROW.match, table.splitlines()) if m}


def test_the_layout_table_lists_every_module_and_none_that_is_missing():
    """Every folder of the packages has a row naming each of its modules (`name.py`, in backticks); a module the
    row names is in the folder."""
    rows = layout_rows()
    folders = {f"{p.parent.relative_to(ROOT)}/" for package in PACKAGES for p in (ROOT / package).rglob("*.py")}
    assert sorted(folders - set(rows)) == [], "folders without a row in the layout table"
    problems = []
    for folder, job in sorted(rows.items()):
        if not (ROOT / folder).is_dir() or folder not in folders:
            continue
        named = set(re.findall(r"`([a-z_]+\.py)", job))
        modules = {p.name for p in (ROOT / folder).glob("*.py") if p.name != "__init__.py"}
        problems += [f"{folder}{name}: not in the table" for name in sorted(modules - named)]
        problems += [f"{folder}{name}: named in the table, not in the folder" for name in sorted(named - modules)]
    assert problems == []
