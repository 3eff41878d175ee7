"""shadow: one structured error contract for the tools LLM agents call, with a safe migration path."""

from __future__ import annotations

from shadow import logs as _logs
from shadow import normalize, tokens
from shadow.adapter import tool
from shadow.codes import CODE_TABLE, Code, CodeSpec, NextAction
from shadow.config import configure
from shadow.contract import ErrorPayload, Fail, OkPayload, Payload, ToolError
from shadow.describe import describe
from shadow.guard import Outcome, arun_tool, guard, run_tool
from shadow.rules import Rules, Translation
from shadow.schema import PayloadError, is_valid, schema, validate
from shadow.sessions import mark, session
from shadow.writer import flush

__version__ = "0.1.0"

_logs.setup()  # stderr, JSON when not a terminal; a no-op when the application configured structlog itself

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
    "Rules",
    "ToolError",
    "Translation",
    "__version__",
    "arun_tool",
    "configure",
    "describe",
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
