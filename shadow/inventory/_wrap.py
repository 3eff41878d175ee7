"""Wrappers that re-raise: a decorator (or the context manager it uses) turning caught errors into another class."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from shadow.inventory._index import ClassInfo, FunctionNode, Index, Module
from shadow.inventory._scan import RUNTIME, Raw, static

_MAX_DEPTH: Final = 3


@dataclass(frozen=True, slots=True)
class Rewrap:
    """``except (A, B) as e: raise Y(f"...{e}") from e`` in a wrapper: what it catches, what it raises instead."""

    caught: tuple[ClassInfo, ...]
    cls: ClassInfo
    template: str | None  # the new message, ``…`` where the caught exception's text goes
    where: str


def _mentions(expr: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(expr))


def _types(module: Module, expr: ast.expr | None) -> list[ast.expr]:
    """The classes an ``except`` names, expanding a module-level tuple (``except ANTICIPATED as e``)."""
    if expr is None:
        return []
    if isinstance(expr, ast.Tuple):
        return [t for e in expr.elts for t in _types(module, e)]
    if isinstance(expr, ast.Name):
        for stmt in module.tree.body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
                stmt, ast.AnnAssign) else []
            value = stmt.value if isinstance(stmt, ast.Assign | ast.AnnAssign) else None
            if any(isinstance(t, ast.Name) and t.id == expr.id for t in targets) and isinstance(value, ast.Tuple):
                return [t for e in value.elts for t in _types(module, e)]
    return [expr]


def _collect(index: Index, module: Module, node: FunctionNode, label: str, depth: int, seen: set[int],
             out: list[Rewrap]) -> None:
    if id(node) in seen or depth > _MAX_DEPTH:
        return
    seen.add(id(node))
    for item in ast.walk(node):
        if isinstance(item, ast.ExceptHandler) and item.name:
            types = _types(module, item.type)
            caught = tuple(index.class_info(index.dotted(module, t), ast.unparse(t)) for t in types)
            for raised in ast.walk(ast.Module(body=item.body, type_ignores=[])):
                if not (isinstance(raised, ast.Raise) and isinstance(raised.exc, ast.Call)):
                    continue
                args = raised.exc.args
                if not args or not _mentions(args[0], item.name):
                    continue
                target = raised.exc.func
                cls = index.class_info(index.dotted(module, target), ast.unparse(target))
                text = static(args[0])
                out.append(Rewrap(caught, cls, text if isinstance(text, str) else None,
                                  f"{label} ({module.file}:{raised.lineno})"))
        elif isinstance(item, ast.Call):
            dotted = index.dotted(module, item.func)
            found = index.function(dotted) if dotted else None
            if found is not None:
                _collect(index, found[0], found[1], f"{label} -> {ast.unparse(item.func)}", depth + 1, seen, out)


def wrappers(index: Index, module: Module, node: FunctionNode) -> list[Rewrap]:
    """The re-raising wrappers among a tool's decorators that the scanned code defines (``@reports_failures``)."""
    out: list[Rewrap] = []
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        dotted = index.dotted(module, target)
        found = index.function(dotted) if dotted else None
        if found is not None:
            _collect(index, found[0], found[1], "@" + ast.unparse(decorator), 0, set(), out)
    return out


def rewrap(raw: Raw, wrapping: Sequence[object]) -> Raw:
    """The site as the model sees it through the first wrapper that catches it: the wrapper's class, the caught
    text inside the wrapper's message, and the wrapper in the chain."""
    if raw.cls is None or raw.is_fail:
        return raw
    for wrap in wrapping:
        assert isinstance(wrap, Rewrap)
        if not any(raw.cls.is_subclass_of(c) for c in wrap.caught):
            continue
        message = raw.message
        if wrap.template is not None and wrap.template != RUNTIME:
            message = wrap.template.replace(RUNTIME, raw.message or RUNTIME, 1)
        return replace(raw, cls=wrap.cls, message=message, status=wrap.cls.status,
                       via=(*raw.via, f"{raw.cls.name} re-raised as {wrap.cls.name} by {wrap.where}"))
    return raw
