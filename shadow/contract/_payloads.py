"""The error contract: ``ToolError``, ``Fail`` and the two payload shapes."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Final, Literal, TypedDict

from shadow import _redact as redact
from shadow.contract._codes import Code, NextAction, defaults, spec

MAX_MESSAGE_CHARS: Final = 400
MAX_SENTENCES: Final = 2
DEFAULT_CONTEXT_CAP: Final = 2048

_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)")
#: Shadow's own retry advice in a message (the code table's, the phrase table's, a drafted rule's), which a
#: non-idempotent tool's downgraded error must not give: the call may have taken effect (a booking, a payment).
_RETRY_ADVICE: Final = re.compile(r"(?:Wait and )?[Mm]ake the identical call again\b[^.!?]*[.!?]?")
NOT_IDEMPOTENT_ADVICE: Final = ("The call may have taken effect: check whether it did before calling again, "
                                "or ask the user.")


class ErrorBody(TypedDict):
    """The ``error`` member of a failure payload."""

    code: str
    message: str
    retryable: bool
    next_action: str
    context: dict[str, redact.JSONValue] | None


class OkPayload(TypedDict):
    """A success: ``{"ok": true, "data": ...}``."""

    ok: Literal[True]
    data: redact.JSONValue


class ErrorPayload(TypedDict):
    """A failure: ``{"ok": false, "error": {...}}``."""

    ok: Literal[False]
    error: ErrorBody


Payload = OkPayload | ErrorPayload


def count_sentences(message: str) -> int:
    """Count sentences the way the message rule does: terminal punctuation followed by space or the end."""
    ends = len(_SENTENCE_END.findall(message.strip()))
    return max(ends, 1) if message.strip() else 0


def check_message(message: str) -> str:
    """Return ``message`` stripped, or raise ``ValueError`` saying which message rule it breaks."""
    if not isinstance(message, str):
        raise TypeError(f"message must be a str, not {type(message).__name__}")
    text = message.strip()
    if not text:
        raise ValueError("message must not be empty; say what went wrong and how to fix it")
    if len(text) > MAX_MESSAGE_CHARS:
        raise ValueError(f"message has {len(text)} characters; keep it to at most {MAX_MESSAGE_CHARS}")
    if count_sentences(text) > MAX_SENTENCES:
        raise ValueError(
            f"message has {count_sentences(text)} sentences; keep it to at most {MAX_SENTENCES} "
            "(what is wrong, then the remedy, with the expected form after 'for example')"
        )
    return text


def clean_context(
    context: object, *, max_bytes: int = DEFAULT_CONTEXT_CAP
) -> dict[str, redact.JSONValue] | None:
    """Make ``context`` contract-safe: a JSON object or None, credentials redacted, size capped."""
    if context is None:
        return None
    converted = redact.to_jsonable(context)
    if not isinstance(converted, dict):
        raise TypeError(f"context must be a mapping or None, not {type(context).__name__}")
    if not converted:
        return None
    if "retry_after_ms" in converted:
        converted["retry_after_ms"] = check_retry_after(converted["retry_after_ms"])
    capped = redact.cap(converted, max_bytes)
    assert isinstance(capped, dict)
    return capped


def check_retry_after(value: object) -> int:
    """``retry_after_ms`` must be a non-negative whole number of milliseconds; floats round up."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"retry_after_ms must be a non-negative integer of milliseconds, not {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"retry_after_ms must be a non-negative integer of milliseconds, not {value!r}")
    whole = int(value)
    return whole if whole == value else whole + 1


def without_retry_advice(message: str) -> str:
    """``message`` with shadow's "make the identical call again" advice replaced by ``NOT_IDEMPOTENT_ADVICE`` (an
    author's own words, which say something else, are left as they are)."""
    if _RETRY_ADVICE.search(message) is None:
        return message
    return _RETRY_ADVICE.sub(NOT_IDEMPOTENT_ADVICE, message, count=1)


@dataclass(frozen=True, slots=True)
class ToolError:
    """One structured error, already checked against the contract's rules."""

    code: Code
    message: str
    retryable: bool
    next_action: NextAction
    context: dict[str, redact.JSONValue] | None = None

    def __post_init__(self) -> None:
        if type(self.code) is not Code:  # a member already: no call through ``EnumType.__call__``
            object.__setattr__(self, "code", Code(self.code))
        if type(self.next_action) is not NextAction:
            object.__setattr__(self, "next_action", NextAction(self.next_action))
        object.__setattr__(self, "message", check_message(self.message))
        if not isinstance(self.retryable, bool):
            raise TypeError(f"retryable must be a bool, not {type(self.retryable).__name__}")
        if self.retryable != (self.next_action is NextAction.RETRY):
            raise ValueError(
                f"retryable={self.retryable} contradicts next_action={self.next_action.value!r}: "
                "retryable is true exactly when next_action is 'retry'"
            )
        object.__setattr__(self, "context", clean_context(self.context))

    @classmethod
    def of(
        cls,
        code: Code | str,
        message: str | None = None,
        *,
        idempotent: bool = True,
        context: object = None,
    ) -> ToolError:
        """Build an error with the code table's defaults (and its default message when none is given)."""
        row = spec(code)
        retryable, next_action = defaults(row.code, idempotent=idempotent)
        text = row.default_message if message is None else message
        if next_action is not row.next_action:  # downgraded: no retry advice in the message either
            text = without_retry_advice(text)
        return cls(row.code, text, retryable, next_action, clean_context(context))

    def downgraded(self) -> ToolError:
        """This error as a non-idempotent tool must report it (no blind retry of upstream failures, in its
        ``next_action`` or in its message)."""
        retryable, next_action = defaults(self.code, idempotent=False)
        if (retryable, next_action) == (self.retryable, self.next_action):
            return self
        return ToolError(self.code, without_retry_advice(self.message), retryable, next_action, self.context)

    def payload(self) -> ErrorPayload:
        """The failure payload, with all five keys present."""
        return {
            "ok": False,
            "error": {
                "code": self.code._value_,  # not ``.value``: a property look-up through the enum's class
                "message": self.message,
                "retryable": self.retryable,
                "next_action": self.next_action._value_,
                "context": self.context,
            },
        }


class Fail(Exception):
    """Raise inside a tool to return a specific structured error.

    ``raise Fail("validation_error", "The field 'due_date' must be ...", field="due_date")``
    """

    def __init__(
        self,
        code: Code | str,
        message: str | None = None,
        *,
        retryable: bool | None = None,
        next_action: NextAction | str | None = None,
        **context: Any,
    ) -> None:
        error = ToolError.of(code, message, context=context or None)
        if retryable is not None or next_action is not None:
            action = NextAction(next_action) if next_action is not None else (
                NextAction.RETRY if retryable else error.next_action
            )
            if retryable is not None and not retryable and action is NextAction.RETRY:
                action = NextAction.ASK_USER
            error = ToolError(error.code, error.message, action is NextAction.RETRY, action, dict(error.context or {}))
        self.error = error
        super().__init__(error.code.value)

    def __str__(self) -> str:
        return f"{self.error.code.value}: {self.error.message}"


def ok(data: object) -> OkPayload:
    """The success payload for ``data`` (converted to plain JSON data)."""
    return {"ok": True, "data": redact.to_jsonable(data, redact=False)}
