"""shadow: one structured error contract for the tools LLM agents call, with a safe migration path.

The module map (one line per subpackage, what it owns) is in ``shadow/README.md``.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from shadow import _deprecated, flags
from shadow._config import configure
from shadow._decorator import tool
from shadow._redact import Public
from shadow._sessions import mark, session
from shadow.calllog._writer import flush
from shadow.contract import (
    CODE_TABLE,
    Code,
    CodeSpec,
    ErrorPayload,
    Fail,
    NextAction,
    OkPayload,
    Outcome,
    Payload,
    PayloadError,
    Rules,
    ToolError,
    Translation,
    arun_tool,
    describe,
    guard,
    is_valid,
    run_tool,
    schema,
    validate,
)

if _typing.TYPE_CHECKING:
    from shadow import normalize, tokens

__version__ = "0.2.0.dev0"

#: Subpackages served on first use (``shadow.normalize.http()``): no call needs them, so ``import shadow`` does not
#: load them. ``import shadow.tokens`` and ``from shadow import normalize`` work as for any submodule.
_ON_FIRST_USE = frozenset({"normalize", "tokens"})

_deprecated.install()


def __getattr__(name: str) -> object:
    if name in _ON_FIRST_USE:
        return _importlib.import_module(f"shadow.{name}")
    return _deprecated.module_getattr(name)

__all__ = [
    "CODE_TABLE",
    "Code",
    "CodeSpec",
    "ErrorPayload",
    "Fail",
    "NextAction",
    "OkPayload",
    "Outcome",
    "Payload",
    "PayloadError",
    "Public",
    "Rules",
    "ToolError",
    "Translation",
    "__version__",
    "arun_tool",
    "configure",
    "describe",
    "flags",
    "flush",
    "guard",
    "is_valid",
    "mark",
    "normalize",
    "run_tool",
    "schema",
    "session",
    "tokens",
    "tool",
    "validate",
]
