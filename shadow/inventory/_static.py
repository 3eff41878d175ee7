"""The value an expression has as far as the source tells, without running it."""

from __future__ import annotations

import ast
from typing import Final

#: What stands for a part of a value or text that is only known at run time.
RUNTIME: Final = "…"


def static(expr: ast.expr | None) -> object:
    """The value an expression has as far as the source tells; run-time parts become ``…``."""
    if expr is None:
        return None
    if isinstance(expr, ast.Constant):
        return expr.value.decode("utf-8", "replace") if isinstance(expr.value, bytes) else expr.value
    if isinstance(expr, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else RUNTIME for v in expr.values)
    if isinstance(expr, ast.Dict):
        return {k.value: static(v) for k, v in zip(expr.keys, expr.values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    if isinstance(expr, ast.List | ast.Tuple):
        return [static(item) for item in expr.elts]
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add | ast.Mod):
        left = static(expr.left)
        if isinstance(left, str):
            right = static(expr.right) if isinstance(expr.op, ast.Add) else RUNTIME
            return left + (right if isinstance(right, str) else RUNTIME) if isinstance(expr.op, ast.Add) else left
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Constant) \
                and isinstance(func.value.value, str):
            return _braces(func.value.value)
        if isinstance(func, ast.Name) and func.id == "dict" and not expr.args:
            return {k.arg: static(k.value) for k in expr.keywords if k.arg}
    return RUNTIME


def _braces(template: str) -> str:
    out, depth = [], 0
    for char in template:
        if char == "{":
            depth += 1
            if depth == 1:
                out.append(RUNTIME)
        elif char == "}" and depth:
            depth -= 1
        elif not depth:
            out.append(char)
    return "".join(out)
