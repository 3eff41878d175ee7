"""shadow: one structured error contract for the tools LLM agents call, with a safe migration path.

The module map (one line per subpackage, what it owns) is in ``shadow/README.md``.
"""

from __future__ import annotations

from shadow import _deprecated, flags, normalize, tokens
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

__version__ = "0.2.0.dev0"

_deprecated.install()
__getattr__ = _deprecated.module_getattr

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
