"""Input shapes of a reference program, read statically from its `get_inputs` and module-level constants.

Nothing is executed: module constants are evaluated by a small interpreter over literals, names and arithmetic
(`batch_size = 16`, `dim = 2 * 1024`, `shape = (batch_size, *input_shape)`), and `get_inputs()` is read for tensor
constructors (`torch.randn(M, K)`, `torch.rand((N, C, H, W))`, `torch.randint(0, 10, (B,))`, chained `.cuda()`
and the like). Anything else is unknown (`?`). Used to name problems (`common.program.parse`).
"""

from __future__ import annotations

import ast
import operator

_MAX_INT = 10**15
_MAX_ITEMS = 16
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.Mod: operator.mod, ast.Div: operator.truediv}
_SIZE_FIRST = {"randn", "rand", "zeros", "ones", "empty", "full"}  # size is the positional args (or a tuple)
_CONSTRUCTORS = _SIZE_FIRST | {"randint", "arange", "randn_like", "rand_like"}
_PASS_THROUGH = {"cuda", "to", "float", "half", "bfloat16", "double", "contiguous", "requires_grad_", "abs", "clone",
                 "softmax", "sigmoid", "relu", "exp", "detach", "cpu", "t"}


class Unknown(Exception):
    """The expression has no static value this interpreter can give."""


def _value(node: ast.expr, env: dict) -> object:
    """A literal, a known name, arithmetic on them, or a tuple/list of those (with `*name` unpacking)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _value(node.operand, env)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return -value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _value(node.left, env), _value(node.right, env)
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in (left, right)):
            try:
                result = _BINOPS[type(node.op)](left, right)
            except (ZeroDivisionError, OverflowError):
                raise Unknown from None
            if abs(result) <= _MAX_INT:
                return result
    if isinstance(node, ast.Tuple | ast.List) and len(node.elts) <= _MAX_ITEMS:
        items: list = []
        for element in node.elts:
            if isinstance(element, ast.Starred):
                inner = _value(element.value, env)
                if not isinstance(inner, tuple):
                    raise Unknown
                items.extend(inner)
            else:
                items.append(_value(element, env))
        return tuple(items)
    raise Unknown


def module_constants(body: list[ast.stmt]) -> dict[str, object]:
    """Top-level `NAME = <constant expression>` (and `A, B = 1, 2`) in order; later ones may use earlier ones."""
    env: dict[str, object] = {}
    for stmt in body:
        _assign(stmt, env)
    return env


def _assign(stmt: ast.stmt, env: dict) -> None:
    if not isinstance(stmt, ast.Assign | ast.AnnAssign) or stmt.value is None:
        return
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    try:
        value = _value(stmt.value, env)
    except Unknown:
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    env.pop(name.id, None)
        return
    for target in targets:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, ast.Tuple) and isinstance(value, tuple) and len(target.elts) == len(value):
            for name, item in zip(target.elts, value, strict=True):
                if isinstance(name, ast.Name):
                    env[name.id] = item


def _size(args: list[ast.expr], env: dict) -> tuple:
    """A constructor's size from its arguments: one tuple, or dimensions (with `*shape` unpacking)."""
    if len(args) == 1 and not isinstance(args[0], ast.Starred):
        value = _value(args[0], env)
        return value if isinstance(value, tuple) else (value,)
    return _value(ast.Tuple(elts=list(args), ctx=ast.Load()), env)


def _tensor_shape(node: ast.expr, env: dict, shapes: dict) -> tuple | None:
    """The shape a tensor expression has, when it is a constructor call (possibly chained) or a known tensor."""
    if isinstance(node, ast.Name):
        return shapes.get(node.id)
    if isinstance(node, ast.BinOp):
        return _tensor_shape(node.left, env, shapes) or _tensor_shape(node.right, env, shapes)
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    name = node.func.attr
    if name in _PASS_THROUGH:
        return _tensor_shape(node.func.value, env, shapes)
    if name not in _CONSTRUCTORS:
        return None
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    try:
        if "size" in keywords:
            return _size([keywords["size"]], env)
        if name in _SIZE_FIRST:
            args = node.args[:1] if name == "full" else node.args
            return _size(list(args), env) if args else None
        if name == "randint":
            return _size([node.args[-1]], env) if len(node.args) >= 2 else None
        if name in ("randn_like", "rand_like") and node.args:
            return _tensor_shape(node.args[0], env, shapes)
        if name == "arange" and node.args:
            stop = _value(node.args[-1] if len(node.args) <= 2 else node.args[1], env)
            start = _value(node.args[0], env) if len(node.args) >= 2 else 0
            return (int(stop - start),)
    except (Unknown, TypeError, ValueError):
        return None
    return None


def _describe(node: ast.expr, env: dict, shapes: dict) -> str:
    shape = _tensor_shape(node, env, shapes)
    if shape is not None and all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        return "×".join(str(d) for d in shape) if shape else "scalar"
    try:
        value = _value(node, env)
    except Unknown:
        return "?"
    if isinstance(value, tuple) and all(isinstance(v, int | float) for v in value):
        return "(" + ", ".join(map(repr, value)) + ")"
    return repr(value) if isinstance(value, int | float | bool) else "?"


def input_shapes(body: list[ast.stmt], function_name: str = "get_inputs") -> list[str]:
    """What `get_inputs()` (or `function_name`) returns, one entry per input: `16×3×256×256`, a number, or `?`;
    [] without it."""
    function = next((s for s in body if isinstance(s, ast.FunctionDef) and s.name == function_name), None)
    if function is None:
        return []
    env = module_constants(body)
    shapes: dict[str, tuple] = {}
    for stmt in function.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            shape = _tensor_shape(stmt.value, env, shapes)
            if shape is not None:
                shapes[stmt.targets[0].id] = shape
                continue
        _assign(stmt, env)
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            value = stmt.value
            elements = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
            return [_describe(e, env, shapes) for e in elements[:_MAX_ITEMS]]
    return []
