"""No import cycles inside ``shadow/``, and a top level small enough to be what ``@shadow.tool`` needs.

The graph is read with ``ast`` from every module under ``shadow/``; each module is a node, a package's
``__init__.py`` included (as the package's name). Every import statement is an edge, wherever it is: at module
level, inside a function (a deferred import is still a dependency), and under ``if TYPE_CHECKING:`` too (a type-only
import still ties the two modules together for mypy and for a reader; the usual escape hatch is not taken: a
Protocol in ``shadow.typing`` or a shared piece moved to its owner breaks such a loop instead). Relative imports are
resolved; ``from shadow.x import y`` where ``y`` is a submodule is an edge to the submodule (not to
``shadow.x``'s ``__init__``, which Python imports on the way but which the importer does not use).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "shadow"
#: The top level: ``@shadow.tool``'s core and the public modules; everything else lives in its subpackage.
MAX_TOP_LEVEL = 20


def _name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _known(name: str, modules: Mapping[str, Path]) -> str | None:
    """``name`` or the closest enclosing module that exists (``shadow.x.Y`` -> ``shadow.x``)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _edges(name: str, path: Path, modules: Mapping[str, Path]) -> set[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(t for a in node.names if (t := _known(a.name, modules)) is not None)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            for alias in node.names:
                target = f"{module}.{alias.name}"
                found_target = target if target in modules else _known(module, modules)
                if found_target is not None:
                    found.add(found_target)
    found.discard(name)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Each module under ``root/shadow`` -> the modules under it that it imports."""
    modules = {_name(p, root): p for p in (root / "shadow").rglob("*.py")}
    return {name: _edges(name, path, modules) for name, path in modules.items()}


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
    return sorted(found)


def _describe(graph: Mapping[str, set[str]], component: list[str]) -> str:
    members = set(component)
    return "\n".join([f"a cycle of {len(component)} modules:",
                      *(f"  {m} -> {', '.join(sorted(graph[m] & members))}" for m in component)])


def test_no_module_under_shadow_is_part_of_an_import_cycle() -> None:
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycles inside shadow/:\n" + "\n".join(_describe(graph, c) for c in found)


def test_the_top_level_holds_at_most_twenty_modules() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, top


def _tree(tmp_path: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_graph_sees_function_level_type_checking_relative_and_submodule_imports(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "shadow/__init__.py": "from shadow._a import A\n",
        "shadow/_a.py": "def f():\n    from shadow.sub import _b\n",
        "shadow/_c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from shadow._a import A\n",
        "shadow/sub/__init__.py": "from . import _b\n",
        "shadow/sub/_b.py": "from .. import _c\nfrom shadow.sub import NAME\n",
    })
    graph = import_graph(root)
    assert graph["shadow"] == {"shadow._a"}
    assert graph["shadow._a"] == {"shadow.sub._b"}
    assert graph["shadow._c"] == {"shadow._a"}
    assert graph["shadow.sub"] == {"shadow.sub._b"}
    assert graph["shadow.sub._b"] == {"shadow._c", "shadow.sub"}
    assert cycles(graph) == [["shadow._a", "shadow._c", "shadow.sub", "shadow.sub._b"]]


def test_a_graph_without_loops_has_no_cycles_and_a_self_import_is_none() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"d"}}) == []
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}) == [["a", "b"], ["c", "d"]]
