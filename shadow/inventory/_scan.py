"""Walking a tool's body without running it: raises, except blocks, error-shaped returns, helpers that raise."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Final

from shadow.contract._rules import looks_like_error
from shadow.inventory._branches import branch_names, values
from shadow.inventory._index import BROAD_EXCEPTION, ClassInfo, FunctionNode, Index, Module, status_constant
from shadow.inventory._static import RUNTIME, static

__all__ = ["RUNTIME", "Raw", "Walker", "static"]

_ABORTS: Final = frozenset({"abort"})  # Flask/Werkzeug ``abort(404)``
_FAILS: Final = frozenset({
    "shadow.Fail", "shadow.contract.Fail", "shadow.contract._payloads.Fail", "shadow.tokens.TokenError",
})
_MAX_DEPTH: Final = 8


@dataclass(frozen=True, slots=True)
class Raw:
    """One error site before a code is proposed for it."""

    file: str
    line: int
    kind: str
    cls: ClassInfo | None = None  # the exception, for exception sites
    message: str | None = None  # static text, ``…`` for run-time parts
    status: int | None = None
    fail_code: str | None = None  # the code of a ``shadow.Fail`` raise ("" when not a constant)
    is_fail: bool = False
    value: object = None  # the static value, for result sites
    caught: tuple[ClassInfo, ...] = ()  # for except-return: what the handler catches
    via: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()  # in a ``call_tool`` dispatcher: the tool names of the branch it is in


@dataclass(frozen=True, slots=True)
class _Handler:
    classes: tuple[ClassInfo, ...]  # () for a bare ``except:``
    name: str | None
    passes: bool  # the handler re-raises what it caught

    def catches(self, cls: ClassInfo | None) -> bool:
        if not self.classes:
            return True
        if cls is None:
            return any(c.broad for c in self.classes)
        return any(cls.is_subclass_of(c) for c in self.classes)


def _calls(node: ast.AST) -> Iterator[ast.Call]:
    """Calls inside an expression, not inside nested functions or lambdas."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(item, ast.Call):
            yield item
        stack.extend(reversed(list(ast.iter_child_nodes(item))))


class Walker:
    """Collects the error sites of one function; ``results=False`` for a helper (only what escapes).

    ``scope`` is the function's qualname (so closures and nested helpers resolve); ``dispatch`` names the
    parameter a ``call_tool`` dispatcher branches on, so each site is tagged with the tools of its branch."""

    def __init__(self, index: Index, module: Module, owner: str | None, *, results: bool, depth: int = 0,
                 scope: str | None = None, dispatch: str | None = None) -> None:
        self.index, self.module, self.owner = index, module, owner
        self.results, self.depth = results, depth
        self.scope, self.dispatch = scope, dispatch
        self.branch: tuple[str, ...] = ()
        self.locals: set[str] = set()  # parameters and assigned names: a value by that name is not a function
        self.assigned: dict[str, ast.expr] = {}  # ``name = EXPR`` (the last one): what ``return name`` returns
        self.sites: list[Raw] = []

    def _keep(self, raw: Raw) -> None:
        self.sites.append(replace(raw, tools=self.branch) if self.branch and not raw.tools else raw)

    def _branch(self, names: tuple[str, ...], stmts: list[ast.stmt], tries: tuple[tuple[_Handler, ...], ...],
                handler: _Handler | None) -> None:
        outer, self.branch = self.branch, names
        try:
            self._body(stmts, tries, handler)
        finally:
            self.branch = outer

    def _dispatched(self, stmt: ast.stmt, tries: tuple[tuple[_Handler, ...], ...], handler: _Handler | None) -> bool:
        variable = self.dispatch
        if variable is None:
            return False
        if isinstance(stmt, ast.Match) and isinstance(stmt.subject, ast.Name) and stmt.subject.id == variable:
            for case in stmt.cases:
                names = branch_names(self.module, case.pattern, variable)
                self._branch(names or self.branch, case.body, tries, handler)
            return True
        if isinstance(stmt, ast.If):
            names = branch_names(self.module, stmt.test, variable)
            if names:
                self._expression(stmt.test, tries, handler)
                self._branch(names, stmt.body, tries, handler)
                self._body(stmt.orelse, tries, handler)
                return True
        return False

    def run(self, node: FunctionNode) -> list[Raw]:
        """Walk the function's body."""
        args = node.args
        self.locals = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
                       if a is not None}
        self.locals |= {n.id for n in _own_nodes(node.body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.assigned = {n.targets[0].id: n.value for n in _own_nodes(node.body)
                         if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}
        self._body(node.body, (), None)
        return self.sites

    def _body(self, stmts: list[ast.stmt], tries: tuple[tuple[_Handler, ...], ...], handler: _Handler | None) -> None:
        for stmt in stmts:
            self._statement(stmt, tries, handler)

    def _statement(self, stmt: ast.stmt, tries: tuple[tuple[_Handler, ...], ...], handler: _Handler | None) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return
        if self._dispatched(stmt, tries, handler):
            return
        if isinstance(stmt, ast.Try | ast.TryStar):
            handlers = tuple(self._handler(h) for h in stmt.handlers)
            self._body(stmt.body, (*tries, handlers), handler)
            for node, info in zip(stmt.handlers, handlers, strict=True):
                self._body(node.body, tries, info)
            self._body(stmt.orelse, tries, handler)
            self._body(stmt.finalbody, tries, handler)
            return
        if isinstance(stmt, ast.Raise):
            self._raise(stmt, tries, handler)
        elif isinstance(stmt, ast.Return) and self.results:
            self._return(stmt, handler)
        for name, value in ast.iter_fields(stmt):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self._body(value, tries, handler)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.match_case):
                        self._expression(item.pattern, tries, handler)
                        self._body(item.body, tries, handler)
                    elif isinstance(item, ast.AST) and not isinstance(item, ast.excepthandler):
                        self._expression(item, tries, handler)
            elif isinstance(value, ast.AST) and name != "exc":
                self._expression(value, tries, handler)

    def _handler(self, node: ast.ExceptHandler) -> _Handler:
        types: list[ast.expr] = []
        if isinstance(node.type, ast.Tuple):
            types = list(node.type.elts)
        elif node.type is not None:
            types = [node.type]
        classes = tuple(self.index.class_info(self.index.dotted(self.module, t), ast.unparse(t)) for t in types)
        passes = any(
            isinstance(n, ast.Raise) and (n.exc is None or (isinstance(n.exc, ast.Name) and n.exc.id == node.name))
            for n in _own_nodes(node.body)
        )
        return _Handler(classes, node.name, passes)

    @staticmethod
    def _caught(exc: ClassInfo | None, tries: tuple[tuple[_Handler, ...], ...]) -> bool:
        for handlers in reversed(tries):
            for handler in handlers:
                if handler.catches(exc):
                    if handler.passes:
                        break  # re-raised: look at the enclosing try
                    return True
        return False

    def _add(self, raw: Raw, tries: tuple[tuple[_Handler, ...], ...]) -> None:
        if self._caught(raw.cls, tries):
            return
        self._keep(raw)

    def _raise(self, stmt: ast.Raise, tries: tuple[tuple[_Handler, ...], ...], handler: _Handler | None) -> None:
        exc = stmt.exc
        if exc is None or (handler is not None and isinstance(exc, ast.Name) and exc.id == handler.name):
            if handler is None:
                return
            for cls in handler.classes or (BROAD_EXCEPTION,):
                if not cls.broad:  # a broad re-raise passes on sites listed where they are raised
                    self._add(Raw(self.module.file, stmt.lineno, "except-reraise", cls), tries)
            return
        self._add(self.raised(exc, stmt.lineno), tries)

    def raised(self, exc: ast.expr, line: int) -> Raw:
        """The site a ``raise EXPR`` makes: the class, its message, a status, or a ``shadow.Fail`` code."""
        call = exc if isinstance(exc, ast.Call) else None
        target = call.func if call is not None else exc
        dotted = self.index.dotted(self.module, target)
        written = ast.unparse(target)
        cls = self.index.class_info(dotted, written)
        if dotted is None and isinstance(target, ast.Name) and target.id[:1].islower():
            return Raw(self.module.file, line, "raise", None, message=None)
        args = call.args if call is not None else []
        keywords = {k.arg: k.value for k in call.keywords if k.arg} if call is not None else {}
        is_fail = dotted in _FAILS or any(q in _FAILS for q in cls.lineage)
        if is_fail:
            code = static(args[0]) if args else static(keywords.get("code"))
            text = static(args[1]) if len(args) > 1 else static(keywords.get("message"))
            fail_code = _code_text(code, args[0] if args else keywords.get("code"))
            return Raw(self.module.file, line, "raise", cls, _text(text), None, fail_code, True)
        if cls.name.endswith("HTTPException") or cls.name.startswith("HTTP"):
            status_expr = keywords.get("status_code", args[0] if args else None)
            status = status_constant(status_expr) if status_expr is not None else None
            if status is not None:
                detail = keywords.get("detail", args[1] if len(args) > 1 else None)
                return Raw(self.module.file, line, "abort", cls, _text(static(detail)), status)
        message = _text(static(args[0])) if args else _text(static(keywords.get("message")))
        return Raw(self.module.file, line, "raise", cls, message, cls.status)

    def _return(self, stmt: ast.Return, handler: _Handler | None) -> None:
        expr = stmt.value
        if isinstance(expr, ast.Name) and expr.id in self.assigned:  # ``err = {...}`` or ``r = helper()``, returned
            expr = self.assigned[expr.id]
        value = static(expr)
        if handler is not None:
            self._keep(Raw(self.module.file, stmt.lineno, "except-return", value=value,
                           caught=handler.classes or (BROAD_EXCEPTION,)))
        elif looks_like_error(value):
            self._keep(Raw(self.module.file, stmt.lineno, "error-return", value=value))
        else:
            call = expr.value if isinstance(expr, ast.Await) else expr
            if isinstance(call, ast.Call):
                self._returned_from(call)

    def _returned_from(self, call: ast.Call) -> None:
        """A returned (or awaited) helper's result: the helper's error returns are this function's, with the chain."""
        helper = self._helper(call.func)
        if helper is None:
            return
        dotted, found = helper
        where = f"{ast.unparse(call.func)} ({found[0].file}:{found[1].lineno})"
        for site in self.index_returns(dotted, found):
            self._keep(replace(site, file=self.module.file, line=call.lineno, via=(where, *site.via)))

    def _expression(self, node: ast.AST, tries: tuple[tuple[_Handler, ...], ...], handler: _Handler | None) -> None:
        for call in _calls(node):
            self._call(call, tries)
        for value in values(node):
            self._passed(value, tries)

    def _passed(self, value: ast.Name | ast.Attribute, tries: tuple[tuple[_Handler, ...], ...]) -> None:
        """A function passed as a value (a hook, a callback): what escapes from it, as if called here."""
        if isinstance(value, ast.Name) and value.id in self.locals:
            return
        helper = self._helper(value)
        if helper is None:
            return
        dotted, found = helper
        where = f"{ast.unparse(value)} passed as a value ({found[0].file}:{found[1].lineno})"
        for escape in self.index_escapes(dotted, found):
            if not self._caught(escape.cls, tries):
                self._keep(replace(escape, file=self.module.file, line=value.lineno, kind="escapes-from-call",
                                   via=(where, *escape.via)))

    def _helper(self, func: ast.expr) -> tuple[str, tuple[Module, FunctionNode]] | None:
        """The scanned function an expression names, while the walk may still go deeper; else ``None``."""
        dotted = self._callee(func)
        found = self.index.function(dotted) if dotted else None
        if dotted is None or found is None or self.depth >= _MAX_DEPTH:
            return None
        return dotted, found

    def _callee(self, func: ast.expr) -> str | None:
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls") \
                and self.owner is not None:
            return f"{self.owner}.{func.attr}"
        if isinstance(func, ast.Name) and self.scope:
            parts = self.scope.split(".")
            for cut in range(len(parts), 0, -1):  # a closure or nested helper, innermost scope first
                key = ".".join([*parts[:cut], func.id])
                if key in self.module.nested:
                    return f"{self.module.name}.{key}"
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            cls = instance_class(self.index, self.module, self.scope, func.value.id)
            if cls is not None:  # ``server = TimeServer()`` in an enclosing scope, then ``server.convert(...)``
                return f"{cls}.{func.attr}"
        return self.index.dotted(self.module, func)

    def _call(self, call: ast.Call, tries: tuple[tuple[_Handler, ...], ...]) -> None:
        dotted = self._callee(call.func)
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
        found = self.index.function(dotted) if dotted else None
        if found is None:
            if name in _ABORTS and call.args:
                status = status_constant(call.args[0])
                if status is not None:
                    text = _text(static(call.args[1])) if len(call.args) > 1 else None
                    self._add(Raw(self.module.file, call.lineno, "abort", None, text, status), tries)
            return
        if self.depth >= _MAX_DEPTH:
            return
        assert dotted is not None
        where = f"{ast.unparse(call.func)} ({found[0].file}:{found[1].lineno})"
        for escape in self.index_escapes(dotted, found):
            if not self._caught(escape.cls, tries):
                self._keep(replace(escape, file=self.module.file, line=call.lineno, kind="escapes-from-call",
                                   via=(where, *escape.via)))

    def index_escapes(self, dotted: str, found: tuple[Module, FunctionNode]) -> list[Raw]:
        """What escapes from a helper function, memoised per index (cycles end the recursion)."""
        return self._helper_sites(dotted, found, returns=False)

    def index_returns(self, dotted: str, found: tuple[Module, FunctionNode]) -> list[Raw]:
        """The error values a helper function returns (through its own returned helpers too), memoised per index."""
        return self._helper_sites(dotted, found, returns=True)

    def _helper_sites(self, dotted: str, found: tuple[Module, FunctionNode], *, returns: bool) -> list[Raw]:
        """One walk of a helper, memoised per index and kind: its escapes, or (``returns``) its error returns."""
        cache: dict[str, list[Raw]] = self.index.memo
        key = f"returns:{dotted}" if returns else dotted
        if key not in cache:
            cache[key] = []  # in progress: a recursive call adds nothing
            module, node = found
            relative = _relative(dotted, module)
            owner = dotted.rpartition(".")[0] if "." in relative and relative not in module.nested else None
            walker = Walker(self.index, module, owner, results=returns, depth=self.depth + 1, scope=relative)
            cache[key] = [_located(s, module.file) for s in walker.run(node) if not returns or s.kind in _RETURNED]
        return cache[key]


#: The kinds of site a helper's caller inherits by returning the helper's result.
_RETURNED: Final = frozenset({"error-return", "except-return"})


def instance_class(index: Index, module: Module, scope: str | None, variable: str) -> str | None:
    """The scanned class a variable holds when the function, an enclosing one or the module assigns it
    ``variable = SomeClass(...)``."""
    parts = scope.split(".") if scope else []
    bodies = [module.defs.get(".".join(parts[:cut])) for cut in range(len(parts), 0, -1)]
    for owner in [*bodies, module.tree]:
        if not isinstance(owner, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
            continue
        for stmt in owner.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and any(
                    isinstance(t, ast.Name) and t.id == variable for t in stmt.targets):
                dotted = index.dotted(module, stmt.value.func)
                found = index.lookup(dotted) if dotted else None
                if found is not None and isinstance(found[1], ast.ClassDef):
                    return dotted
    return None


def _relative(dotted: str, module: Module) -> str:
    return dotted[len(module.name) + 1:] if dotted.startswith(module.name + ".") else dotted


def _located(raw: Raw, file: str) -> Raw:
    """A helper's site, remembering where it is raised for the ``via`` chain."""
    if raw.kind == "escapes-from-call" or raw.via:  # an escape, or a site returned through a deeper helper
        return raw
    return replace(raw, via=(f"{raw.kind} at {file}:{raw.line}",))


def _own_nodes(stmts: list[ast.stmt]) -> Iterator[ast.AST]:
    stack: list[ast.AST] = list(stmts)
    while stack:
        item = stack.pop()
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        yield item
        stack.extend(ast.iter_child_nodes(item))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _code_text(value: object, expr: ast.expr | None) -> str:
    if isinstance(value, str) and value != RUNTIME:
        return value
    if isinstance(expr, ast.Attribute):  # Code.NOT_FOUND
        return expr.attr.lower()
    return ""
