"""Reading a dispatcher's branches (the tool names each serves) and the functions an expression passes as values."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from shadow.inventory._index import Module, constant_str


def values(node: ast.AST) -> Iterator[ast.Name | ast.Attribute]:
    """Names used as values (``hooks=[check]``, ``callback=self.on_error``), not called, not in nested functions."""
    called: set[int] = set()
    stack = [node]
    found: list[ast.Name | ast.Attribute] = []
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(item, ast.Call):
            called.add(id(item.func))
        if isinstance(item, ast.Name | ast.Attribute) and isinstance(item.ctx, ast.Load) and id(item) not in called:
            found.append(item)
            if isinstance(item, ast.Attribute):
                continue
        stack.extend(ast.iter_child_nodes(item))
    return iter(found)


def branch_names(module: Module, test: ast.AST, variable: str) -> tuple[str, ...]:
    """The tool names a dispatcher branch handles: ``case "a" | "b":``, ``if name == "a"``, ``name in ("a", "b")``."""
    if isinstance(test, ast.MatchValue):
        found = constant_str(module, test.value)
        return (found,) if found else ()
    if isinstance(test, ast.MatchOr):
        return tuple(n for p in test.patterns for n in branch_names(module, p, variable))
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return tuple(n for v in test.values for n in branch_names(module, v, variable))
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) \
            and test.left.id == variable:
        right = test.comparators[0]
        if isinstance(test.ops[0], ast.Eq):
            found = constant_str(module, right)
            return (found,) if found else ()
        if isinstance(test.ops[0], ast.In) and isinstance(right, ast.Tuple | ast.List | ast.Set):
            return tuple(n for e in right.elts if (n := constant_str(module, e)))
    return ()
