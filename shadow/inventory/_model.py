"""What ``shadow inventory`` finds: tools, error sites with their proposed codes, and skipped files."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

from shadow.contract._codes import CODE_TABLE

Kind = Literal["raise", "except-reraise", "except-return", "error-return", "abort", "escapes-from-call"]
KINDS: Final[tuple[str, ...]] = (
    "raise", "except-reraise", "except-return", "error-return", "abort", "escapes-from-call",
)
#: The version of the JSON shape (``shadow inventory --format json``).
FORMAT_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class ToolDef:
    """A tool function found by its decorator or by a ``--select`` pattern."""

    name: str  # the name the tool is called (and logged) by
    qualname: str  # ``Class.method`` or ``function``
    module: str
    file: str
    line: int
    is_async: bool
    found_by: str  # the decorator, or ``select:PATTERN``


@dataclass(frozen=True, slots=True)
class RuleDraft:
    """How the emitted rules module recognises a site: an exception rule or a result rule."""

    kind: Literal["exception", "result"]
    code: str
    class_ref: str | None = None  # dotted path of an importable class (``pkg.errors.NotFound``)
    builtin: str | None = None  # a builtin exception class name (``ValueError``)
    class_name: str | None = None  # matched by name when the class cannot be imported
    status: int | None = None  # the exception's ``status_code``/``code`` (framework aborts)
    pattern: str | None = None  # regex searched in str(exc), or in the error text of a value
    name: str = ""


@dataclass(frozen=True, slots=True)
class Site:
    """One way a tool can fail, where it is, and the code proposed for it (``code=None``: unplaced)."""

    file: str
    line: int
    tool: str
    kind: str
    exception: str | None  # the exception class as resolved (``pkg.errors.NotFound``), when there is one
    status: int | None
    message: str | None  # the message or error text with ``…`` where it is built at run time
    code: str | None
    reason: str
    via: tuple[str, ...] = ()  # for escapes-from-call: the helpers the exception comes through
    covered_by: str | None = None  # the built-in rule that already maps it, when one does
    rule: RuleDraft | None = field(default=None, compare=False)

    @property
    def placed(self) -> bool:
        """Whether a code is proposed for this site."""
        return self.code is not None

    def what(self) -> str:
        """A short label of the error: the exception (and status), or the error value's text."""
        if self.exception:
            short = self.exception.rsplit(".", 1)[-1]
            return f"{short} {self.status}" if self.status is not None else short
        if self.status is not None:
            return f"status {self.status}"
        return repr(self.message) if self.message is not None else "?"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data."""
        data = asdict(self)
        data["via"] = list(self.via)
        data["placed"] = self.placed
        return data


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file that could not be read or parsed; the rest of the inventory goes on without it."""

    file: str
    line: int | None
    error: str


@dataclass(frozen=True, slots=True)
class Inventory:
    """Every error site of the tools under the given paths."""

    files: int
    tools: tuple[ToolDef, ...]
    sites: tuple[Site, ...]
    skipped: tuple[Skipped, ...]
    modules: tuple[str, ...] = ()  # the dotted names of the modules read, as ``--select`` matches them

    @property
    def codes(self) -> tuple[str, ...]:
        """The distinct proposed codes, in code-table order."""
        found = {s.code for s in self.sites if s.code}
        return tuple(c.value for c in CODE_TABLE if c.value in found)

    @property
    def unplaced(self) -> tuple[Site, ...]:
        """The sites no code could be proposed for."""
        return tuple(s for s in self.sites if not s.placed)

    def summary(self) -> str:
        """The one-line summary: distinct error sites, proposed codes, unplaced sites."""
        codes = f" ({', '.join(self.codes)})" if self.codes else ""
        line = (f"{_count(len(self.sites), 'distinct error site')} in {_count(len(self.tools), 'tool')}, "
                f"{_count(len(self.codes), 'proposed code')}{codes}, {_count(len(self.unplaced), 'unplaced site')}")
        if self.skipped:
            line += f"; {_count(len(self.skipped), 'file')} skipped"
        return line

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``shadow inventory --format json`` (``shadow ready --inventory`` reads it)."""
        return {
            "version": FORMAT_VERSION,
            "files": self.files,
            "tools": [asdict(t) for t in self.tools],
            "sites": [s.to_dict() for s in self.sites],
            "skipped": [asdict(s) for s in self.skipped],
            "summary": {"tools": len(self.tools), "sites": len(self.sites), "codes": list(self.codes),
                        "unplaced": len(self.unplaced), "skipped": len(self.skipped), "text": self.summary()},
        }


def _count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless one: "1 tool", "3 tools"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
