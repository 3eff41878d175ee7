"""The inventory's view of a package: parsed modules, what their names resolve to, and exception classes."""

from __future__ import annotations

import ast
import builtins
import importlib
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from shadow.inventory._model import Skipped

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
_STATUS_ATTRS: Final = ("status_code", "status", "http_status", "code")
_SKIP_DIRS: Final = frozenset({"__pycache__", "site-packages", "node_modules", "venv", ".venv", ".tox", ".git"})
_BROAD: Final = frozenset({"builtins.Exception", "builtins.BaseException"})
#: Standard library modules never imported to look a class up (importing them does something).
_NO_IMPORT: Final = frozenset({"this", "antigravity", "idlelib", "turtle", "turtledemo", "tkinter", "__main__"})


@dataclass(slots=True)
class Module:
    """One parsed source file."""

    name: str  # dotted module name (``pkg.tools``), or the file's stem outside a package
    file: str  # as shown in reports
    package: str  # the package relative imports start from
    in_package: bool  # the file sits in a directory with ``__init__.py``, so it can be imported by name
    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)  # local name -> dotted target
    defs: dict[str, ast.AST] = field(default_factory=dict)  # ``f``, ``Class``, ``Class.method``, ``f.inner``
    nested: set[str] = field(default_factory=set)  # the keys of ``defs`` that are functions inside functions


@dataclass(frozen=True, slots=True)
class ClassInfo:
    """An exception class as far as the source tells: where it lives, its stdlib base and its status."""

    qualname: str  # ``pkg.errors.NotFound``, ``builtins.ValueError``, ``fastapi.HTTPException``
    name: str
    pyclass: type[BaseException] | None = None  # the class itself, when it is a builtin or stdlib class
    base: type[BaseException] | None = None  # the nearest builtin or stdlib ancestor
    importable: str | None = None  # dotted path to import it by, for a class defined in a package
    status: int | None = None  # a class-level ``status_code = 404`` (or inherited)
    lineage: tuple[str, ...] = ()  # qualnames of the class and its ancestors in the scanned code
    known: bool = False  # resolved to a definition (scanned code, builtins or stdlib)

    @property
    def broad(self) -> bool:
        """``Exception`` or ``BaseException``: a handler for it catches everything."""
        return self.qualname in _BROAD

    def is_subclass_of(self, other: ClassInfo) -> bool:
        """Whether a handler for ``other`` catches this class (as far as the source tells)."""
        if other.broad or other.qualname in self.lineage or other.qualname == self.qualname:
            return True
        return bool(other.pyclass and self.base and issubclass(self.base, other.pyclass))


BROAD_EXCEPTION: Final = ClassInfo("builtins.Exception", "Exception", Exception, Exception, known=True,
                                   lineage=("builtins.Exception",))


#: The largest source file ``shadow inventory`` parses: hand-written tool modules are far smaller, and parsing a
#: 16 MB file took a minute and 2.6 GB of memory.
MAX_SOURCE_BYTES: Final = 4 * 1024 * 1024


def python_files(paths: Iterable[Path]) -> list[Path]:
    """The ``.py`` files under ``paths`` (files as given, directories searched), sorted, without duplicates."""
    found: dict[Path, None] = {}
    for path in paths:
        if path.is_dir():
            for item in sorted(path.rglob("*.py")):
                if not any(part in _SKIP_DIRS or part.startswith(".") for part in item.relative_to(path).parts):
                    found[item] = None
        elif path.exists():  # a file; a device or FIFO is reported as skipped by ``parse``, never read
            found[path] = None
        else:
            raise ValueError(f"{path} does not exist; pass a source directory or .py file, for example src/tools")
    return list(found)


def _module_name(path: Path) -> tuple[str, str, bool]:
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.resolve().parent
    in_package = (folder / "__init__.py").exists()
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    name = ".".join(parts) or path.resolve().parent.name
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    return name, package, in_package


def parse(path: Path, shown: str) -> Module | Skipped:
    """Parse one file into a ``Module``, or say why it was skipped."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            return Skipped(shown, None, "not a regular file (a device, FIFO or socket)")
        if info.st_size > MAX_SOURCE_BYTES:
            return Skipped(shown, None, f"{info.st_size} bytes, over the {MAX_SOURCE_BYTES // (1024 * 1024)} MiB "
                                        "shadow inventory reads from one file (generated code?)")
        tree = ast.parse(path.read_bytes(), filename=shown)
    except SyntaxError as exc:
        return Skipped(shown, exc.lineno, f"SyntaxError: {exc.msg}")
    except (OSError, ValueError) as exc:
        return Skipped(shown, None, f"{type(exc).__name__}: {exc}")
    name, package, in_package = _module_name(path)
    module = Module(name, shown, package, in_package, tree)
    for node in tree.body:
        _index_statement(module, node)
    return module


def _index_statement(module: Module, node: ast.stmt) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            module.imports[local] = alias.name if alias.asname else alias.name.split(".")[0]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = module.package.split(".") if module.package else []
            anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
            base = ".".join([*anchor, *([base] if base else [])])
        for alias in node.names:
            if alias.name != "*":
                module.imports[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        module.defs[node.name] = node
        _index_nested(module, node.name, node)
    elif isinstance(node, ast.ClassDef):
        module.defs[node.name] = node
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                module.defs[f"{node.name}.{item.name}"] = item
                _index_nested(module, f"{node.name}.{item.name}", item)
    elif isinstance(node, ast.If | ast.Try):  # ``try: import x except ImportError: ...`` and TYPE_CHECKING blocks
        for child in node.body:
            _index_statement(module, child)


def _index_nested(module: Module, qualname: str, node: FunctionNode) -> None:
    """Functions defined inside ``node`` (a factory's ``@server.tool`` functions, closures passed as hooks)."""
    stack: list[ast.AST] = list(node.body)
    while stack:
        item = stack.pop()
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            key = f"{qualname}.{item.name}"
            if key not in module.defs:
                module.defs[key] = item
                module.nested.add(key)
                _index_nested(module, key, item)
            continue
        if isinstance(item, ast.ClassDef | ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(item))


class Index:
    """Every parsed module, with name resolution across them and a cache of exception class facts."""

    def __init__(self, modules: Iterable[Module]) -> None:
        self.modules: dict[str, Module] = {m.name: m for m in modules}
        self._classes: dict[str, ClassInfo] = {}
        self._building: set[str] = set()
        self.memo: dict[str, Any] = {}  # per-function results of the body walker

    def dotted(self, module: Module, expr: ast.expr) -> str | None:
        """The dotted name an expression (``NotFound``, ``errors.NotFound``, ``self.x``) refers to, if any."""
        if isinstance(expr, ast.Name):
            if expr.id in module.defs:
                return self.canonical(f"{module.name}.{expr.id}")
            if expr.id in module.imports:
                return self.canonical(module.imports[expr.id])
            if hasattr(builtins, expr.id):
                return f"builtins.{expr.id}"
            return None
        if isinstance(expr, ast.Attribute):
            head = self.dotted(module, expr.value)
            return self.canonical(f"{head}.{expr.attr}") if head else None
        return None

    def canonical(self, dotted: str, depth: int = 0) -> str:
        """Follow re-exports (``from .errors import NotFound`` in ``__init__``) to where a name is defined."""
        if depth > 8:
            return dotted
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = self.modules.get(".".join(parts[:cut]))
            if module is None:
                continue
            rest = parts[cut:]
            if ".".join(rest) in module.defs:
                return dotted
            if rest[0] in module.imports:
                return self.canonical(".".join([module.imports[rest[0]], *rest[1:]]), depth + 1)
            return dotted
        return dotted

    def lookup(self, dotted: str) -> tuple[Module, ast.AST] | None:
        """The module and definition a dotted name points at, when it is in the scanned code."""
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = self.modules.get(".".join(parts[:cut]))
            if module is not None:
                node = module.defs.get(".".join(parts[cut:]))
                return (module, node) if node is not None else None
        return None

    def function(self, dotted: str) -> tuple[Module, FunctionNode] | None:
        """The function (or method) definition a dotted name points at."""
        found = self.lookup(dotted)
        if found is not None and isinstance(found[1], ast.FunctionDef | ast.AsyncFunctionDef):
            return found[0], found[1]
        return None

    def class_info(self, dotted: str | None, written: str = "?") -> ClassInfo:
        """What is known about the exception class ``dotted`` (``None``: a name the source does not resolve)."""
        if dotted is None:
            return ClassInfo(f"?{written}", written.rsplit(".", 1)[-1])
        cached = self._classes.get(dotted)
        if cached is None:
            cached = self._classes[dotted] = self._build_class(dotted)
        return cached

    def _build_class(self, dotted: str) -> ClassInfo:
        name = dotted.rsplit(".", 1)[-1]
        found = self.lookup(dotted)
        if found is not None and isinstance(found[1], ast.ClassDef):
            if dotted in self._building:
                return ClassInfo(dotted, name, lineage=(dotted,), known=True)
            self._building.add(dotted)
            try:
                return self._package_class(dotted, *found)  # type: ignore[arg-type]
            finally:
                self._building.discard(dotted)
        pyclass = _stdlib_class(dotted)
        if pyclass is not None:
            return ClassInfo(dotted, name, pyclass, pyclass, lineage=(dotted,), known=True)
        return ClassInfo(dotted, name, lineage=(dotted,))

    def _package_class(self, dotted: str, module: Module, node: ast.ClassDef) -> ClassInfo:
        bases = [self.class_info(self.dotted(module, b), ast.unparse(b)) for b in node.bases]
        status = _class_status(node)
        lineage = [dotted]
        base_class: type[BaseException] | None = None
        for base in bases:
            lineage += [q for q in base.lineage if q not in lineage]
            base_class = base_class or base.base
            status = status if status is not None else base.status
        return ClassInfo(dotted, node.name, None, base_class, dotted if module.in_package else None, status,
                         tuple(lineage), known=True)


def _class_status(node: ast.ClassDef) -> int | None:
    for item in node.body:
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(item, ast.Assign) and len(item.targets) == 1:
            target, value = item.targets[0], item.value
        elif isinstance(item, ast.AnnAssign):
            target, value = item.target, item.value
        if isinstance(target, ast.Name) and target.id in _STATUS_ATTRS and value is not None:
            status = status_constant(value)
            if status is not None:
                return status
    return None


def constant_str(module: Module, expr: ast.expr | None) -> str | None:
    """A string the source fixes: ``"git_status"``, or an enum member's value (``GitTools.STATUS.value``,
    ``GitTools.STATUS`` of a ``class GitTools(str, Enum)`` in the same module)."""
    if isinstance(expr, ast.Constant):
        return expr.value if isinstance(expr.value, str) else None
    if not isinstance(expr, ast.Attribute):
        return None
    parts = ast.unparse(expr).split(".")
    if parts[-1] == "value":
        parts = parts[:-1]
    if len(parts) != 2:
        return None
    owner = module.defs.get(parts[0])
    if not isinstance(owner, ast.ClassDef):
        return None
    for item in owner.body:
        if isinstance(item, ast.Assign) and any(isinstance(t, ast.Name) and t.id == parts[1] for t in item.targets):
            return item.value.value if isinstance(item.value, ast.Constant) and isinstance(
                item.value.value, str) else None
    return None


def status_constant(expr: ast.expr) -> int | None:
    """An HTTP status written as ``404``, ``status.HTTP_404_NOT_FOUND`` or ``HTTPStatus.NOT_FOUND``."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, int) and not isinstance(expr.value, bool):
        return expr.value if 100 <= expr.value <= 599 else None
    name = expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else None
    if name is None:
        return None
    if name.startswith("HTTP_") and name[5:8].isdigit():
        return int(name[5:8])
    if isinstance(expr, ast.Attribute) and ast.unparse(expr.value).endswith("HTTPStatus"):
        from http import HTTPStatus

        member = HTTPStatus.__members__.get(name)
        return int(member) if member is not None else None
    return None


def _stdlib_class(dotted: str) -> type[BaseException] | None:
    module_name, _, name = dotted.rpartition(".")
    top = module_name.split(".")[0]
    if module_name != "builtins" and (top not in sys.stdlib_module_names or top in _NO_IMPORT):
        return None
    try:
        found = getattr(importlib.import_module(module_name), name, None)
    except ImportError:
        return None
    return found if isinstance(found, type) and issubclass(found, BaseException) else None
