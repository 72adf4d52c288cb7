"""Static hack checks on one program's syntax tree, nothing run: the `static_flag` entries of `common/checks.py`.

Ingest's second stage (`queries/ingest/program_checks.py`) compiles every program already; it hands the candidate
part's statements (the text past the cut, `ref_chars`) and the reference's `ReferenceInfo` (memoized per distinct
reference) to `static_flags`. Everything is read from the candidate part alone, so the reference's own torch ops
never count. What each flag means is in common/checks.py; how each is found:

- *reach*: from `ModelNew.forward`, every name and attribute it mentions, transitively through the candidate's
  functions and methods of those names (a class mentioned brings its methods but `__init__`/`backward`), and
  through what `self.<attr>` was assigned anywhere (`self.fn = wrapper`). A Triton kernel
  (`common/program/syntax_rules.py`) mentioned on the way is reached.
- `kernel_never_called`: kernels are defined and none is reached (or ModelNew has no `forward`).
- `torch_compute_in_forward`: in the reached functions (kernels aside), a call of a torch compute op through
  `torch.`/`F.`/`nn.functional.` or an imported name, a tensor method of one (`x.relu()`, `x.sum()`), `@`, or
  a call of `self.<attr>` assigned an `nn` compute layer. Allocation, shape and copy ops are not in the list.
- `try_except_fallback`: a `try` whose body reaches a kernel, with a handler that does not re-raise and computes
  with torch, returns or only passes (`except: continue`, a hand-written autotuning loop, is not one).
- `cuda_stream`, `threads`, `timing_patch`, `torch_patch`, `caller_frames`: the names listed below, anywhere in the
  candidate (`torch_patch`: an assignment to a `torch.` name other than a timing function or a setting).
- `output_cache`: a reached function returns what a module-level dict/list holds (`return _cache[key]`), indexes
  one by `data_ptr()`, or returns a `self.<attr>` that a reached method set from a computation (not an allocation).
- `tensor_subclass`: a class deriving from `Tensor`/`torch.Tensor`, a def named `__torch_function__` or
  `__torch_dispatch__`, or `as_subclass`/`_make_subclass`/`_make_wrapper_subclass`, anywhere in the candidate.
- `clock_in_forward`: a reached function calls a clock (`hack_names.CLOCK_CALLS`: `time.perf_counter`, ...) or a
  stack reader (`hack_names.STACK_CALLS`), by its imported name too, or mentions a frame's `f_back`/`f_locals`.
- `reference_not_plain`: the reference part (`ReferenceInfo.problem`) breaks `common/program/reference_part.py`'s
  rule, the one the judge refuses to run (here on the whole reference text, before the cut).
- `precision_downcast`: a conversion to float16/bfloat16 in the candidate (`.half()`, `.to(torch.float16)`,
  `x.to(tl.bfloat16)` in a kernel, `dtype=torch.float16`; a dtype only compared or mapped is none), while the
  reference mentions neither.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from common.checks import STATIC_FLAGS
from common.program import hack_names as vocab
from common.program.reference_part import reference_problem
from common.program.syntax_rules import dotted, is_kernel, triton_aliases

_LOW_PRECISION_TEXT = re.compile(r"float16|bfloat16|\.half\(|torch\.half\b")


# checks whose findings need one of these words in the text are skipped for texts without them
_NEEDLES = {"threads": ("thread", "Thread", "multiprocessing", "concurrent", "fork", "Pool"),
            "timing_patch": ("Event", "perf_counter", "time", "do_bench", "synchronize", "Timer")}


@dataclass(frozen=True)
class ReferenceInfo:
    """What the checks need of the reference part: its import aliases (and those of triton's names:
    `syntax_rules.triton_aliases`), whether it uses fp16/bf16 itself, and why it is not plain
    (`common.program.reference_part`), if it is not."""

    aliases: dict[str, str] = field(default_factory=dict)
    low_precision: bool = False
    triton: dict[str, str] = field(default_factory=dict)
    problem: str | None = None


def reference_info(reference: str, tree: ast.Module | None) -> ReferenceInfo:
    return ReferenceInfo(_aliases(tree.body) if tree is not None else {},
                         bool(_LOW_PRECISION_TEXT.search(reference)),
                         triton_aliases(tree.body) if tree is not None else {},
                         reference_problem(tree.body) if tree is not None else None)


def static_flags(candidate: list[ast.stmt], ref: ReferenceInfo, text: str) -> list[str]:
    """The static flags of a candidate part (its top-level statements; `text`: its source), in `common.checks`
    order."""
    wanted = frozenset(name for name, needles in _NEEDLES.items() if any(needle in text for needle in needles))
    found = _Program(candidate, {**ref.aliases, **_aliases(candidate)}, {**ref.triton, **triton_aliases(candidate)},
                     wanted).flags(ref)
    return [name for name in STATIC_FLAGS if name in found]


def _aliases(body: Iterable[ast.stmt]) -> dict[str, str]:
    """Local name -> dotted origin of the imports among `body`'s top-level statements (`F` -> torch.nn.functional)."""
    aliases = {}
    for stmt in body:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(stmt, ast.ImportFrom) and stmt.module:
            for a in stmt.names:
                aliases[a.asname or a.name] = f"{stmt.module}.{a.name}"
    return aliases


_SKIP_FIELDS = frozenset({"ctx", "type_comment", "kind", "id", "attr", "name"})  # contexts and plain strings
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that can hold nodes of interest (not expression contexts, names, constants)."""
    if kind not in _FIELDS:
        _FIELDS[kind] = () if kind is ast.Constant or kind is ast.Name else tuple(
            f for f in kind._fields if f not in _SKIP_FIELDS)
    return _FIELDS[kind]


_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)


def _is_container(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp):
        return True
    return isinstance(value, ast.Call) and (dotted(value.func) or "").split(".")[-1] in vocab.CONTAINERS


def _low(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in vocab.LOW_PRECISION


def _downcast(call: ast.Call) -> bool:
    """A conversion to fp16/bf16: `.half()`, `.bfloat16()`, `.to(torch.float16)`, `x.to(tl.bfloat16)`,
    `tl.cast(x, tl.float16)`, `.type(torch.half)`, or a `dtype=torch.float16` argument; a dtype compared or
    returned is none."""
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr in ("half", "bfloat16") and not call.args:
            return True
        if func.attr in ("to", "type", "cast") and any(_low(a) for a in call.args):
            return True
    return any(k.arg in ("dtype", "dst_type") and _low(k.value) for k in call.keywords)


class _Program:
    """The candidate's definitions by name, gathered in one walk: per function (kernels apart) the names and
    attributes it mentions and the calls it makes, and what `self.<attr>` was assigned anywhere."""

    def __init__(self, body: list[ast.stmt], aliases: dict[str, str], triton: dict[str, str], wanted: frozenset[str]):
        self.aliases = aliases
        self.triton = triton  # `syntax_rules.triton_aliases`: which decorators make a Triton kernel
        self.kernels: set[str] = set()
        self.functions: dict[str, list[ast.AST]] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.self_values: dict[str, list[tuple[ast.expr, ast.AST | None]]] = {}  # attr -> (value, where assigned)
        self.names: dict[int, set[str]] = {}  # id(function) -> names and attributes mentioned in it
        self.calls: dict[int, list[ast.AST]] = {}  # id(function) -> its Call and `@` nodes
        self.tries: list[ast.Try] = []
        self.returns: dict[int, list[ast.Return]] = {}  # id(function) -> its return statements
        self.containers: set[str] = set()  # module-level names bound to a dict, list or set
        self.module_values: dict[str, list[ast.expr]] = {}  # module-level name -> values assigned to it
        self.found: set[str] = set()
        model_new = None
        stack: list[tuple[ast.AST, ast.AST | None, bool]] = [(stmt, None, False) for stmt in body]
        while stack:
            node, owner, in_kernel = stack.pop()
            kind = type(node)
            if kind is ast.Name or kind is ast.Attribute:
                name = node.id if kind is ast.Name else node.attr
                if owner is not None and not in_kernel:
                    self.names[id(owner)].add(name)
                if kind is ast.Attribute:
                    self._attribute(node, wanted, in_kernel)
            elif kind is ast.Call or (kind is ast.BinOp and type(node.op) is ast.MatMult):
                if owner is not None and not in_kernel:
                    self.calls[id(owner)].append(node)
                if kind is ast.Call:
                    self._call(node, wanted)
            elif kind in _FUNCTION:
                if node.name in vocab.TENSOR_SUBCLASS_HOOKS:
                    self.found.add("tensor_subclass")
                if is_kernel(node, self.triton):
                    self.kernels.add(node.name)
                    in_kernel = True
                elif not in_kernel:
                    self.functions.setdefault(node.name, []).append(node)
                    self.names[id(node)] = set()
                    self.calls[id(node)] = []
                    self.returns[id(node)] = []
                    owner = node
            elif kind is ast.ClassDef:
                self.classes.setdefault(node.name, node)
                if any((dotted(base) or "").split(".")[-1] == "Tensor" for base in node.bases):
                    self.found.add("tensor_subclass")
                if node.name == "ModelNew" and model_new is None:
                    model_new = node
            elif kind is ast.Assign or kind is ast.AnnAssign or kind is ast.AugAssign:
                self._assignment(node, owner, wanted)
                if owner is None and kind is not ast.AugAssign and node.value is not None:
                    names = [t.id for t in (node.targets if kind is ast.Assign else [node.target])
                             if isinstance(t, ast.Name)]
                    for name in names:
                        self.module_values.setdefault(name, []).append(node.value)
                    if _is_container(node.value):
                        self.containers |= set(names)
            elif kind is ast.Return and owner is not None and not in_kernel:
                self.returns[id(owner)].append(node)
            elif kind is ast.Try or kind is getattr(ast, "TryStar", None):
                self.tries.append(node)
            elif kind is ast.Import or kind is ast.ImportFrom:
                self._import(node, wanted)
            for field_name in _fields(kind):
                value = getattr(node, field_name, None)
                if type(value) is list:
                    stack.extend([(item, owner, in_kernel) for item in value if isinstance(item, ast.AST)])
                elif isinstance(value, ast.AST):
                    stack.append((value, owner, in_kernel))
        self.forward = [m for m in (model_new.body if model_new else []) if isinstance(m, _FUNCTION)
                        and m.name == "forward" and not is_kernel(m, self.triton)]

    def _attribute(self, node: ast.Attribute, wanted: frozenset[str], in_kernel: bool) -> None:
        attr = node.attr
        if attr in vocab.TENSOR_SUBCLASS_HOOKS:
            self.found.add("tensor_subclass")
        if not in_kernel and (attr in vocab.FRAME_ATTRS or self._origin(dotted(node)) in vocab.FRAME_CALLS):
            self.found.add("caller_frames")
        if attr in vocab.STREAM_NAMES or (attr == "stream" and (dotted(node.value) or "").endswith("cuda")):
            self.found.add("cuda_stream")
        if "threads" in wanted and not in_kernel:
            name = dotted(node) or ""
            if name.split(".")[0] in vocab.THREAD_MODULES or (attr in vocab.THREAD_NAMES and name != "os.forkpty"):
                self.found.add("threads")

    def _import(self, node: ast.Import | ast.ImportFrom, wanted: frozenset[str]) -> None:
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        if any(m.split(".")[0] in vocab.THREAD_MODULES or m == "torch.multiprocessing" for m in modules):
            self.found.add("threads")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch"):
            if any(a.name in vocab.STREAM_NAMES or a.name == "stream" for a in node.names):
                self.found.add("cuda_stream")

    def _assignment(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign, owner: ast.AST | None,
                    wanted: frozenset[str]) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute):
                if dotted(target.value) == "self" and node.value is not None:
                    self.self_values.setdefault(target.attr, []).append((node.value, owner))
                self._patched(dotted(target), wanted)

    def reach(self, roots: list[ast.AST]) -> tuple[bool, list[ast.AST]]:
        """(whether a kernel is mentioned, the functions visited) from `roots`, transitively by name."""
        visited: set[int] = set()
        functions: list[ast.AST] = []
        seen: set[str] = set()
        kernel = False
        stack = list(roots)
        while stack:
            node = stack.pop()
            if id(node) in visited:
                continue
            visited.add(id(node))
            if id(node) in self.names:
                functions.append(node)
                names = self.names[id(node)] - seen
            else:  # a statement or an expression (a try's body, a value assigned to self.<attr> or a global)
                names = {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
                         if isinstance(n, ast.Name | ast.Attribute)} - seen
                stack.extend(n for n in ast.walk(node) if isinstance(n, _FUNCTION) and not is_kernel(n, self.triton))
            seen |= names
            kernel = kernel or not self.kernels.isdisjoint(names)
            for name in names:
                if name not in ("__init__", "backward"):
                    stack.extend(self.functions.get(name, ()))
                stack.extend(self.module_values.get(name, ()))  # `_launchers = {"add": triton_add}`
                for value, owner in self.self_values.get(name, ()):  # and where it was assigned: locals built
                    stack.extend([value] if owner is None else [value, owner])  # there (`nn.Sequential(*layers)`)
                if name in self.classes:
                    stack.extend(m for m in self.classes[name].body if isinstance(m, _FUNCTION)
                                 and m.name not in ("__init__", "backward"))
        return kernel, functions

    def flags(self, ref: ReferenceInfo) -> set[str]:
        found = set(self.found)
        if ref.low_precision:
            found.discard("precision_downcast")
        reached, functions = self.reach(self.forward)
        if self.kernels and not reached:
            found.add("kernel_never_called")
        if any(self._computes(node) for fn in functions if fn.name != "__init__" for node in self.calls[id(fn)]):
            found.add("torch_compute_in_forward")
        if any(self._reads_clock(fn) for fn in functions):
            found.add("clock_in_forward")
        if ref.problem is not None:
            found.add("reference_not_plain")
        if any(self._falls_back(node) for node in self.tries):
            found.add("try_except_fallback")
        if ((self.containers and self._returns_cached(functions)) or self._keys_by_address(functions)
                or self._returns_kept(functions)):
            found.add("output_cache")
        return found

    def _origin(self, name: str | None) -> str | None:
        """A dotted name with its first part replaced by what it was imported as (`F.relu` -> torch.nn...)."""
        if name is None:
            return None
        head, _, rest = name.partition(".")
        origin = self.aliases.get(head, head)
        return f"{origin}.{rest}" if rest else origin

    def _computes(self, node: ast.AST) -> bool:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return True
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        if isinstance(func, ast.Call):  # nn.Conv2d(...)(x)
            return (dotted(func.func) or "").split(".")[-1] in vocab.NN_COMPUTE_LAYERS
        name = dotted(func)
        origin = self._origin(name) or ""
        last = origin.split(".")[-1]
        if origin.startswith("torch.") or (name or "").split(".")[0] in vocab.TORCH_ROOTS:
            return last in vocab.COMPUTE_OPS or (last.endswith("_") and last[:-1] in vocab.COMPUTE_OPS)
        if isinstance(func, ast.Attribute):
            receiver = dotted(func.value)
            if receiver == "self":
                return any(self._is_layer(v) for v, _ in self.self_values.get(func.attr, ()))
            if receiver is not None and receiver.split(".")[0] in vocab.NOT_TENSORS | set(self.aliases):
                return False
            return func.attr in vocab.COMPUTE_OPS or (func.attr.endswith("_") and func.attr[:-1] in vocab.COMPUTE_OPS)
        return False

    def _reads_clock(self, fn: ast.AST) -> bool:
        """Whether a function calls a clock or reads the call stack (`clock_in_forward`)."""
        if self.names[id(fn)] & {"f_back", "f_locals", "_getframe"}:
            return True
        return any(isinstance(call, ast.Call) and self._origin(dotted(call.func)) in vocab.CLOCK_CALLS | vocab.STACK_CALLS
                   for call in self.calls[id(fn)])

    def _is_layer(self, value: ast.expr) -> bool:
        """Whether a value assigned to `self.<attr>` builds an nn compute layer."""
        return any(isinstance(n, ast.Call) and (self._origin(dotted(n.func)) or "").split(".")[-1] in
                   vocab.NN_COMPUTE_LAYERS and (self._origin(dotted(n.func)) or "").startswith(("torch.nn", "nn."))
                   for n in ast.walk(value))

    def _falls_back(self, node: ast.Try) -> bool:
        if not node.handlers or not self.reach(node.body)[0]:
            return False
        return any(self._fallback_handler(h) for h in node.handlers)

    def _fallback_handler(self, handler: ast.ExceptHandler) -> bool:
        """A handler that does not re-raise and computes with torch, returns, or swallows the error (`pass`); one
        that moves on to the next configuration (`continue`: a hand-written autotuning loop) is none."""
        nodes = list(ast.walk(handler))
        if any(isinstance(n, ast.Raise) for n in nodes):
            return False
        swallows = all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
                       for s in handler.body)
        return swallows or any(isinstance(n, ast.Return) or self._computes(n) for n in nodes)

    def _timing_target(self, target: str | None) -> bool:
        origin = self._origin(target) if target and "." in target else None
        return origin is not None and any(origin == t or origin.endswith("." + t) for t in vocab.TIMING_TARGETS)

    def _patched(self, target: str | None, wanted: frozenset[str]) -> None:
        """An assignment to `target`: a timing function (`timing_patch`) or another part of torch (`torch_patch`)."""
        if "timing_patch" in wanted and self._timing_target(target):
            self.found.add("timing_patch")
        elif target and "." in target and (origin := self._origin(target) or "").startswith("torch."):
            if not origin.startswith(vocab.TORCH_SETTINGS) and not self._timing_target(target):
                self.found.add("torch_patch")

    def _call(self, call: ast.Call, wanted: frozenset[str]) -> None:
        """`setattr(time, "perf_counter", ...)` and the like; conversions to fp16/bf16."""
        if (dotted(call.func) == "setattr" and len(call.args) >= 2 and isinstance(call.args[1], ast.Constant)
                and isinstance(call.args[1].value, str)):
            self._patched(f"{dotted(call.args[0])}.{call.args[1].value}", wanted)
        if _downcast(call):
            self.found.add("precision_downcast")

    def _returns_cached(self, functions: list[ast.AST]) -> bool:
        """A reached function returns what a module-level dict/list holds (`return _cache[key]`; a cached function
        called, `_kernels[key](x)`, is none)."""
        for fn in functions:
            for ret in self.returns[id(fn)]:
                called = {id(n.func) for n in ast.walk(ret) if isinstance(n, ast.Call)}
                if any(isinstance(n, ast.Subscript) and id(n) not in called and isinstance(n.value, ast.Name)
                       and n.value.id in self.containers for n in ast.walk(ret)):
                    return True
        return False

    def _returns_kept(self, functions: list[ast.AST]) -> bool:
        """A reached function returns `self.<attr>` that a reached method (not `__init__`) set from a computation,
        not an allocation (`if not hasattr(self, "out"): self.out = launch(x)`; `return self.out`)."""
        reached = {id(fn) for fn in functions if fn.name != "__init__"}
        for fn in functions:
            for ret in self.returns[id(fn)]:
                value = ret.value
                if not (isinstance(value, ast.Attribute) and dotted(value.value) == "self"):
                    continue
                for assigned, owner in self.self_values.get(value.attr, ()):
                    if (owner is not None and id(owner) in reached and isinstance(assigned, ast.Call)
                            and (dotted(assigned.func) or "").split(".")[-1] not in vocab.ALLOCATIONS):
                        return True
        return False

    def _keys_by_address(self, functions: list[ast.AST]) -> bool:
        """A reached function indexes something by a tensor's address (`cache[(a.data_ptr(), ...)]`)."""
        for fn in functions:
            if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "data_ptr"
                       for n in self.calls[id(fn)]):
                continue
            for n in ast.walk(fn):
                if isinstance(n, ast.Subscript) and any(isinstance(k, ast.Call) and isinstance(k.func, ast.Attribute)
                                                        and k.func.attr == "data_ptr" for k in ast.walk(n.slice)):
                    return True
        return False
