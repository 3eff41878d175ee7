"""``shadow inventory``: every error a tool layer can return, found by reading its source (never running it)."""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Final

from shadow.inventory._branches import branch_names
from shadow.inventory._emit import emit_rules
from shadow.inventory._index import FunctionNode, Index, Module, constant_str, parse, python_files
from shadow.inventory._model import KINDS, Inventory, RuleDraft, Site, Skipped, ToolDef
from shadow.inventory._place import place, status_code, text_code
from shadow.inventory._scan import Raw, Walker
from shadow.inventory._wrap import rewrap, wrappers

#: Decorators that mark agent tools: ``@tool``, ``@mcp.tool()``, ``@shadow.tool``, ``@function_tool``, FastMCP's
#: ``@mcp_tool`` (a method of an ``MCPMixin``), ...
TOOL_DECORATORS: Final = frozenset({"tool", "tool_plain", "function_tool", "guard", "call_tool", "mcp_tool"})
#: Decorators that mark a low-level dispatcher: one function serving every tool, branching on the name.
DISPATCHERS: Final = frozenset({"call_tool"})
_NAMES_SHOWN: Final = 8

__all__ = [
    "KINDS", "TOOL_DECORATORS", "Inventory", "RuleDraft", "Site", "Skipped", "ToolDef", "emit_rules",
    "format_table", "inventory", "python_files", "status_code", "text_code",
]


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_posix()


def _terminal(expr: ast.expr) -> str | None:
    target = expr.func if isinstance(expr, ast.Call) else expr
    return target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)


def _decorator(module: Module, expr: ast.expr) -> tuple[str, str | None] | None:
    """``(decorator as written, tool name it gives)`` when ``expr`` marks a tool (on any instance:
    ``@server.tool(name=Tools.STATUS.value)``, ``@mcp.tool``, ``@app.call_tool()``)."""
    if _terminal(expr) not in TOOL_DECORATORS:
        return None
    name: str | None = None
    if isinstance(expr, ast.Call):
        given = {k.arg: k.value for k in expr.keywords}.get("name")
        if given is None and expr.args:
            given = expr.args[0]
        name = constant_str(module, given)
    return "@" + ast.unparse(expr), name


def _candidates(module: Module) -> Iterable[tuple[str, FunctionNode, str | None]]:
    """``(qualname, node, owner class dotted name)`` for functions, methods and functions nested in them."""
    for qualname, node in module.defs.items():
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            head = qualname.split(".")[0]
            owner = f"{module.name}.{head}" if "." in qualname and isinstance(module.defs.get(head), ast.ClassDef) \
                else None
            yield qualname, node, owner


def _selected(module: Module, qualname: str, patterns: Sequence[str]) -> str | None:
    name = qualname.rsplit(".", 1)[-1]
    full = f"{module.name}.{qualname}"
    public = not any(part.startswith("_") for part in qualname.split("."))
    nested = qualname in module.nested
    for pattern in patterns:
        if not public and not _names_private(pattern):  # a glob's "*" takes no private helper for a tool
            continue
        texts = (full, qualname) if nested else (full, qualname, name)  # a nested function by its full path
        if any(fnmatch.fnmatchcase(text, pattern) for text in texts):
            return pattern
        if public and not nested and fnmatch.fnmatchcase(module.name, pattern):
            return pattern
    return None


def _names_private(pattern: str) -> bool:
    """Whether a ``--select`` pattern itself names a private part (``tools._legacy_*``, ``_run``)."""
    return any(part.startswith("_") for part in pattern.split("."))


def _dispatch_variable(node: FunctionNode) -> str | None:
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args) if a.arg not in ("self", "cls")]
    return params[0] if params else None


def _dispatched_tools(module: Module, node: FunctionNode, variable: str) -> list[str]:
    """The tool names a dispatcher's branches handle, in source order."""
    names: dict[str, None] = {}
    for item in ast.walk(node):
        if isinstance(item, ast.match_case):
            names.update(dict.fromkeys(branch_names(module, item.pattern, variable)))
        elif isinstance(item, ast.If):
            names.update(dict.fromkeys(branch_names(module, item.test, variable)))
    return list(names)


def find_tools(index: Index, select: Sequence[str] = ()) -> list[tuple[ToolDef, Module, FunctionNode, str | None]]:
    """The tools in the index: decorated functions and methods, plus those ``select`` patterns name."""
    found = []
    for module in index.modules.values():
        for qualname, node, owner in _candidates(module):
            marks = [m for m in (_decorator(module, d) for d in node.decorator_list) if m is not None]
            how: str | None = marks[0][0] if marks else None
            name = next((n for _, n in marks if n), None) or node.name
            if how is None:
                pattern = _selected(module, qualname, select)
                how = f"select:{pattern}" if pattern is not None else None
            if how is None:
                continue
            tool = ToolDef(name, qualname, module.name, module.file, node.lineno,
                           isinstance(node, ast.AsyncFunctionDef), how)
            found.append((tool, module, node, owner))
    return sorted(found, key=lambda t: (t[0].file, t[0].line))


def inventory(
    paths: Iterable[str | Path],
    *,
    select: Sequence[str] = (),
    on_file: Callable[[Path], None] | None = None,
) -> Inventory:
    """Read the Python files under ``paths`` and list every error site of every tool in them.

    Tools are functions and methods with a tool decorator (``@tool``, ``@mcp.tool()``, ``@shadow.tool``, ...)
    and those whose module or name matches a ``select`` glob. A file that does not parse is listed in
    ``skipped`` with its syntax error, and the rest goes on.
    """
    files = python_files(Path(p) for p in paths)
    modules: list[Module] = []
    skipped: list[Skipped] = []
    for path in files:
        parsed = parse(path, _shown(path))
        (modules if isinstance(parsed, Module) else skipped).append(parsed)  # type: ignore[arg-type]
        if on_file is not None:
            on_file(path)
    index = Index(modules)
    tools = find_tools(index, select)
    sites: dict[Site, None] = {}
    listed: list[ToolDef] = []
    for tool, module, node, owner in tools:
        variable = _dispatch_variable(node) if tool.found_by.startswith("@") and any(
            _terminal(d) in DISPATCHERS for d in node.decorator_list) else None
        served = _dispatched_tools(module, node, variable) if variable else []
        listed += [ToolDef(name, tool.qualname, tool.module, tool.file, tool.line, tool.is_async,
                           f"{tool.found_by}: {variable} == {name!r}") for name in served]
        listed.append(tool)
        walker = Walker(index, module, owner, results=True, scope=tool.qualname, dispatch=variable)
        wrapping = wrappers(index, module, node)
        for raw in walker.run(node):
            for target in raw.tools or (tool.name,):
                sites.setdefault(place(_wrapped(raw, wrapping), target), None)
    ordered = sorted(sites, key=lambda s: (s.file, s.line, s.tool, KINDS.index(s.kind), s.exception or ""))
    return Inventory(len(files), tuple(listed), tuple(ordered), tuple(skipped), tuple(m.name for m in modules))


def _wrapped(raw: Raw, wrapping: Sequence[object]) -> Raw:
    return rewrap(raw, wrapping) if wrapping else raw


def format_table(found: Inventory) -> str:
    """The readable table: file, line, tool, kind, what fails, proposed code and the reason; then the summary."""
    rows = [(f"{s.file}:{s.line}", s.tool, s.kind, s.what(), s.code or "UNPLACED",
             s.reason + (f" (via {' -> '.join(s.via)})" if s.via else "")) for s in found.sites]
    header = ("file:line", "tool", "kind", "error", "proposed", "reason")
    lines = []
    if rows:
        widths = [min(max(len(r[i]) for r in [header, *rows]), 48) for i in range(5)]
        for row in [header, *rows]:
            lines.append("  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths, strict=True)) + "  " + row[5])
    elif not found.tools:
        lines.append("no tools found: mark them with a tool decorator (@tool, @mcp.tool(), @shadow.tool) "
                     "or name them with --select, for example --select 'tools.*'")
        if found.modules:
            names = ", ".join(sorted(found.modules)[:_NAMES_SHOWN])
            more = f" and {len(found.modules) - _NAMES_SHOWN} more" if len(found.modules) > _NAMES_SHOWN else ""
            lines.append(f"the modules read are named {names}{more} (a package's modules by their dotted path "
                         f"from its root): --select matches those names")
    for skip in found.skipped:
        where = f"{skip.file}:{skip.line}" if skip.line else skip.file
        lines.append(f"skipped {where}: {skip.error}")
    lines.append(found.summary())
    return "\n".join(lines)
