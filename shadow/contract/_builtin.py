"""The built-in rules: Python's exceptions, HTTP statuses and the phrase table; the bug types never read."""

from __future__ import annotations

import json
from typing import Any, Final

from shadow.contract._codes import Code
from shadow.contract._dispatch import PHRASE_OF
from shadow.contract._phrase import Phrase
from shadow.contract._phrases import PHRASES
from shadow.contract._reading import propose
from shadow.contract._rule import ExceptionRule, ResultRule
from shadow.contract._values import ValueMatch, error_text, looks_like_error, status_in, status_of


def _status_context(value: object) -> dict[str, Any]:
    return {"status": status_of(value)}


def _json_context(exc: BaseException) -> dict[str, Any]:
    assert isinstance(exc, json.JSONDecodeError)
    return {"line": exc.lineno, "column": exc.colno, "problem": exc.msg}


def _unicode_context(exc: BaseException) -> dict[str, Any]:
    assert isinstance(exc, UnicodeError)
    return {"encoding": getattr(exc, "encoding", None)}


EXCEPTION_RULES: Final[tuple[ExceptionRule, ...]] = (
    ExceptionRule(TimeoutError, Code.UPSTREAM_TIMEOUT,
                  "A service this tool depends on did not answer in time. Make the identical call again.",
                  name="TimeoutError"),
    ExceptionRule(ConnectionError, Code.UPSTREAM_UNAVAILABLE,
                  "A service this tool depends on could not be reached. Make the identical call again shortly.",
                  name="ConnectionError"),
    ExceptionRule(FileNotFoundError, Code.NOT_FOUND,
                  "The file or item named in the call does not exist. Check the name, for example list what exists first.",
                  name="FileNotFoundError"),
    ExceptionRule(FileExistsError, Code.ALREADY_EXISTS,
                  "The file or item the call would create exists already. Use the existing one or choose another name.",
                  name="FileExistsError"),
    ExceptionRule(PermissionError, Code.PERMISSION_DENIED,
                  "The tool is not allowed to access that resource. Ask the user to grant access instead of retrying.",
                  name="PermissionError"),
    ExceptionRule((IsADirectoryError, NotADirectoryError), Code.FAILED_PRECONDITION,
                  "The path is not of the kind this call needs. Pass a file where a file is expected, for example a path ending in a file name.",
                  name="IsADirectoryError|NotADirectoryError"),
    ExceptionRule(json.JSONDecodeError, Code.VALIDATION_ERROR,
                  "The input is not valid JSON (line {line}, column {column}). Send well-formed JSON, for example {{\"key\": \"value\"}}.",
                  context=_json_context, name="JSONDecodeError"),
    ExceptionRule(UnicodeError, Code.UNSUPPORTED_INPUT,
                  "The input is not text in a supported encoding. Send UTF-8 text, for example plain ASCII.",
                  context=_unicode_context, name="UnicodeError"),
    ExceptionRule(NotImplementedError, Code.NOT_IMPLEMENTED,
                  "This operation is not supported by the tool. Use a different tool or tell the user.",
                  name="NotImplementedError"),
    ExceptionRule(MemoryError, Code.PAYLOAD_TOO_LARGE,
                  "The request needs more memory than the tool has. Send a smaller input, for example fewer items per call.",
                  name="MemoryError"),
)

STATUS_TO_CODE: Final[tuple[tuple[tuple[int, ...], Code], ...]] = (
    ((400, 422), Code.VALIDATION_ERROR),
    ((401,), Code.UNAUTHENTICATED),
    ((403,), Code.PERMISSION_DENIED),
    ((404, 410), Code.NOT_FOUND),
    ((408, 504), Code.UPSTREAM_TIMEOUT),
    ((409,), Code.CONFLICT),
    ((412, 428), Code.FAILED_PRECONDITION),
    ((413, 414, 431), Code.PAYLOAD_TOO_LARGE),
    ((415,), Code.UNSUPPORTED_INPUT),
    ((429,), Code.RATE_LIMITED),
    ((499,), Code.CANCELLED),
    ((501,), Code.NOT_IMPLEMENTED),
    ((502, 503), Code.UPSTREAM_UNAVAILABLE),
    ((500,), Code.INTERNAL_ERROR),
)

def phrase_matches(phrase: Phrase) -> ValueMatch:
    """A predicate: the value is error-shaped and its error text, URLs and paths masked, reads as ``phrase``."""

    def matcher(value: object) -> bool:
        if not looks_like_error(value):
            return False
        text = error_text(value)
        return text is not None and propose(text) is phrase

    matcher.__name__ = f"text:{phrase.code.value}"
    PHRASE_OF[matcher] = phrase
    return matcher


RESULT_RULES: Final[tuple[ResultRule, ...]] = (
    *(ResultRule(status_in(*statuses), code, context=_status_context, name=f"status:{code.value}")
      for statuses, code in STATUS_TO_CODE),
    *(ResultRule(phrase_matches(phrase), phrase.code, name=f"text:{phrase.code.value}", action=phrase.action)
      for phrase in PHRASES),
    ResultRule(looks_like_error, None, name="error-shaped"),
)


#: Python's own exception types for a bug in the code (a user's subclass of one is read as any other exception).
PROGRAMMING_ERRORS: Final = frozenset({
    ArithmeticError, AssertionError, AttributeError, BufferError, EOFError, FloatingPointError, ImportError,
    IndexError, KeyError, LookupError, ModuleNotFoundError, NameError, OverflowError, RecursionError, ReferenceError,
    StopAsyncIteration, StopIteration, SyntaxError, SystemError, TypeError, UnboundLocalError, ZeroDivisionError,
})
