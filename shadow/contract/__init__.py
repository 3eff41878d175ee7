"""The error contract: the closed code set, the two payload shapes, the rules, the guard and the schema."""

from __future__ import annotations

from shadow.contract._codes import CODE_TABLE, NEXT_ACTION_MEANINGS, Code, CodeSpec, NextAction
from shadow.contract._describe import describe, markdown_table
from shadow.contract._guard import Outcome, arun_tool, guard, run_tool
from shadow.contract._payloads import ErrorPayload, Fail, OkPayload, Payload, ToolError, ok
from shadow.contract._rules import ExceptionRule, ResultRule, Rules, Translation
from shadow.contract._schema import PayloadError, is_valid, schema, schema_text, validate
from shadow.contract._values import error_text, looks_like_error

__all__ = [
    "CODE_TABLE",
    "NEXT_ACTION_MEANINGS",
    "Code",
    "CodeSpec",
    "ErrorPayload",
    "ExceptionRule",
    "Fail",
    "NextAction",
    "OkPayload",
    "Outcome",
    "Payload",
    "PayloadError",
    "ResultRule",
    "Rules",
    "ToolError",
    "Translation",
    "arun_tool",
    "describe",
    "error_text",
    "guard",
    "is_valid",
    "looks_like_error",
    "markdown_table",
    "ok",
    "run_tool",
    "schema",
    "schema_text",
    "validate",
]
