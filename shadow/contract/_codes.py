"""The closed set of error codes and their defaults: the single source for code, schema, docs and prompt."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final


class NextAction(enum.StrEnum):
    """What the model should do next after an error."""

    RETRY = "retry"
    ASK_USER = "ask_user"
    STOP = "stop"


class Code(enum.StrEnum):
    """The closed set of error codes a tool may return."""

    VALIDATION_ERROR = "validation_error"
    UNSUPPORTED_INPUT = "unsupported_input"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    NOT_FOUND = "not_found"
    ALREADY_EXISTS = "already_exists"
    CONFLICT = "conflict"
    FAILED_PRECONDITION = "failed_precondition"
    UNAUTHENTICATED = "unauthenticated"
    PERMISSION_DENIED = "permission_denied"
    RATE_LIMITED = "rate_limited"
    QUOTA_EXCEEDED = "quota_exceeded"
    UPSTREAM_TIMEOUT = "upstream_timeout"
    UPSTREAM_UNAVAILABLE = "upstream_unavailable"
    CANCELLED = "cancelled"
    NOT_IMPLEMENTED = "not_implemented"
    REJECTED = "rejected"
    INTERNAL_ERROR = "internal_error"


@dataclass(frozen=True, slots=True)
class CodeSpec:
    """One row of the code table: a code's defaults and its documentation."""

    code: Code
    retryable: bool
    next_action: NextAction
    http_status: int
    meaning: str
    default_message: str


NEXT_ACTION_MEANINGS: Final[MappingProxyType[NextAction, str]] = MappingProxyType(
    {
        NextAction.RETRY: "make the identical call again, after retry_after_ms when context gives it",
        NextAction.ASK_USER: "do not repeat the call as is; fix the input or ask the user for what is missing",
        NextAction.STOP: "do not call this tool again for this task; report the failure to the user",
    }
)

_R, _A, _S = NextAction.RETRY, NextAction.ASK_USER, NextAction.STOP

_ROWS: Final[tuple[CodeSpec, ...]] = (
    CodeSpec(Code.VALIDATION_ERROR, False, _A, 422,
             "an argument is missing or malformed; the message names the field and the expected form",
             "An argument is missing or malformed. Check the tool's input schema and call again with corrected arguments."),
    CodeSpec(Code.UNSUPPORTED_INPUT, False, _A, 415,
             "the input is well formed but of a kind this tool does not handle",
             "This tool does not handle that kind of input. Use a supported format or a different tool."),
    CodeSpec(Code.PAYLOAD_TOO_LARGE, False, _A, 413,
             "an argument or the request is larger than the tool accepts",
             "The request is larger than this tool accepts. Send a smaller input, for example fewer items per call."),
    CodeSpec(Code.NOT_FOUND, False, _A, 404,
             "the thing the call names does not exist",
             "The requested item does not exist. Check the identifier or ask the user for the right one."),
    CodeSpec(Code.ALREADY_EXISTS, False, _S, 409,
             "the thing the call would create exists already; the work is done",
             "The item already exists, so there is nothing to create. Use the existing item instead."),
    CodeSpec(Code.CONFLICT, False, _A, 409,
             "the call conflicts with the current state, for example a concurrent edit",
             "The request conflicts with the current state of the item. Read the current state before changing it."),
    CodeSpec(Code.FAILED_PRECONDITION, False, _A, 412,
             "the system is not in the state the call requires",
             "The system is not in the state this call requires. Complete the required step first."),
    CodeSpec(Code.UNAUTHENTICATED, False, _A, 401,
             "credentials are missing, invalid or expired",
             "The credentials are missing, invalid or expired. Ask the user to sign in again."),
    CodeSpec(Code.PERMISSION_DENIED, False, _S, 403,
             "the caller is known but not allowed to do this",
             "The caller is not allowed to do this. Ask the user to request access instead of retrying."),
    CodeSpec(Code.RATE_LIMITED, True, _R, 429,
             "too many calls in a short time; the identical call will succeed later",
             "Too many calls were made in a short time. Wait and make the identical call again."),
    CodeSpec(Code.QUOTA_EXCEEDED, False, _S, 429,
             "a usage quota or spending limit is used up; retrying will not help",
             "A usage quota or spending limit is used up. Tell the user; retrying will not help."),
    CodeSpec(Code.UPSTREAM_TIMEOUT, True, _R, 504,
             "a service the tool depends on did not answer in time",
             "A service this tool depends on did not answer in time. Make the identical call again."),
    CodeSpec(Code.UPSTREAM_UNAVAILABLE, True, _R, 503,
             "a service the tool depends on is unreachable or down for now",
             "A service this tool depends on is unavailable right now. Make the identical call again shortly."),
    CodeSpec(Code.CANCELLED, False, _S, 499,
             "the call was cancelled before it finished",
             "The call was cancelled before it finished. Do not repeat it unless the user asks."),
    CodeSpec(Code.NOT_IMPLEMENTED, False, _S, 501,
             "the tool does not support this operation",
             "This operation is not supported by the tool. Use a different tool or tell the user."),
    CodeSpec(Code.REJECTED, False, _A, 400,
             "the tool refused the call for a reason its message gives in the tool's own words; no more specific code is known",
             "The tool refused the call. Do not repeat it as is; change the call as its message says or ask the user."),
    CodeSpec(Code.INTERNAL_ERROR, False, _S, 500,
             "the tool failed in a way it cannot explain; nothing the model changes will help",
             "The tool failed unexpectedly. Tell the user the operation could not be completed."),
)

CODE_TABLE: Final[MappingProxyType[Code, CodeSpec]] = MappingProxyType({row.code: row for row in _ROWS})

#: Codes whose retry could repeat side effects; a non-idempotent tool downgrades them to ask_user.
DOWNGRADED_WHEN_NOT_IDEMPOTENT: Final[frozenset[Code]] = frozenset(
    {Code.UPSTREAM_TIMEOUT, Code.UPSTREAM_UNAVAILABLE}
)


def spec(code: Code | str) -> CodeSpec:
    """Return the table row of ``code``; a string must be one of the documented codes."""
    try:
        return CODE_TABLE[Code(code)]
    except ValueError:
        known = ", ".join(c.value for c in Code)
        raise ValueError(f"unknown error code {code!r}; use one of: {known}") from None


def defaults(code: Code | str, *, idempotent: bool = True) -> tuple[bool, NextAction]:
    """Return ``(retryable, next_action)`` for ``code``, downgraded for a non-idempotent tool."""
    row = spec(code)
    if not idempotent and row.code in DOWNGRADED_WHEN_NOT_IDEMPOTENT:
        return False, NextAction.ASK_USER
    return row.retryable, row.next_action
