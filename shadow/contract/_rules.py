"""Ordered translation rules: exceptions and legacy error values to structured errors, in one place."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from shadow._logs import get_logger
from shadow._names import check_name, storable_name
from shadow._redact import scrub_text, to_jsonable
from shadow.contract._codes import Code, spec
from shadow.contract._payloads import Fail, ToolError
from shadow.contract._phrases import PHRASES, Phrase, mask_locations
from shadow.contract._values import (
    ValueMatch,
    error_text,
    looks_like_error,
    status_in,
    status_of,
    text_matches,
)

log = get_logger("shadow.rules")

ExcMatch: TypeAlias = type[BaseException] | tuple[type[BaseException], ...] | Callable[[BaseException], bool]
Extractor: TypeAlias = Callable[[Any], Mapping[str, Any] | None]

@dataclass(frozen=True, slots=True)
class Translation:
    """The structured error a rule produced, the rule's name, and whether no rule really mapped it."""

    error: ToolError
    rule: str | None
    unmapped: bool = False


@dataclass(frozen=True, slots=True)
class ExceptionRule:
    """Exception type or predicate (and optional text pattern) → code, message template, context."""

    match: ExcMatch
    code: Code
    message: str | Callable[[BaseException], str] | None = None
    context: Extractor | None = None
    pattern: re.Pattern[str] | None = None
    name: str = ""

    def applies(self, exc: BaseException) -> bool:
        """Whether this rule claims ``exc``."""
        hit = isinstance(exc, self.match) if isinstance(self.match, type | tuple) else bool(self.match(exc))
        return hit and (self.pattern is None or self.pattern.search(str(exc)) is not None)


@dataclass(frozen=True, slots=True)
class ResultRule:
    """A matcher on a legacy return value → code (or ``None``: an error no rule maps), message, context."""

    match: ValueMatch
    code: Code | None
    message: str | Callable[[Any], str] | None = None
    context: Extractor | None = None
    name: str = ""


class Rules:
    """An ordered list of translation rules; the first that matches wins.

    ``Rules.default()`` covers the standard library and common legacy error values; put your own rules first
    with ``Rules([...]) + Rules.default()`` or ``Rules.default().on(...)`` (which prepends).
    """

    __slots__ = ("exception_rules", "result_rules")

    def __init__(
        self,
        exception_rules: Iterable[ExceptionRule] = (),
        result_rules: Iterable[ResultRule] = (),
    ) -> None:
        self.exception_rules: tuple[ExceptionRule, ...] = tuple(exception_rules)
        self.result_rules: tuple[ResultRule, ...] = tuple(result_rules)

    def __add__(self, other: Rules) -> Rules:
        if not isinstance(other, Rules):
            return NotImplemented
        return Rules(self.exception_rules + other.exception_rules, self.result_rules + other.result_rules)

    def __len__(self) -> int:
        return len(self.exception_rules) + len(self.result_rules)

    def __repr__(self) -> str:
        return f"Rules({len(self.exception_rules)} exception rules, {len(self.result_rules)} result rules)"

    @classmethod
    def default(cls, *, results: bool = True) -> Rules:
        """The built-in rules: stdlib exceptions, and (unless ``results=False``) legacy error values."""
        return cls(_DEFAULT_EXCEPTION_RULES, _DEFAULT_RESULT_RULES if results else ())

    def without_defaults(self) -> Rules:
        """A copy without the built-in rules, keeping the order of the rest: what a stack that adds its own
        rules and ``Rules.default()`` after them (the proxy, ``shadow import``) takes from a user's
        ``Rules.default().on_result(...)``, so the built-in text rules never shadow the MCP ones."""
        exc_defaults = {id(r) for r in _DEFAULT_EXCEPTION_RULES}
        res_defaults = {id(r) for r in _DEFAULT_RESULT_RULES}
        return Rules([r for r in self.exception_rules if id(r) not in exc_defaults],
                     [r for r in self.result_rules if id(r) not in res_defaults])

    @classmethod
    def empty(cls) -> Rules:
        """No rules at all: every exception becomes ``internal_error``."""
        return cls()

    def on(
        self,
        match: ExcMatch,
        code: Code | str,
        message: str | Callable[[BaseException], str] | None = None,
        *,
        context: Extractor | None = None,
        pattern: str | None = None,
        name: str | None = None,
    ) -> Rules:
        """A copy with an exception rule put first (it wins over the existing ones)."""
        rule = ExceptionRule(match, spec(code).code, message, context, _compile(pattern), _rule_name(name, match))
        return Rules((rule, *self.exception_rules), self.result_rules)

    def on_result(
        self,
        match: ValueMatch | str,
        code: Code | str | None,
        message: str | Callable[[Any], str] | None = None,
        *,
        context: Extractor | None = None,
        name: str | None = None,
    ) -> Rules:
        """A copy with a result rule put first; ``match`` is a predicate or a regex searched in the result's text.

        A regex decides what *is* an error: it matches a plain text result (``"Database error: no such
        table"``, with no error flag or prefix) as well as the error text of an error-shaped value."""
        predicate = text_matches(match, plain=True) if isinstance(match, str) else match
        resolved = spec(code).code if code is not None else None
        rule = ResultRule(predicate, resolved, message, context, _rule_name(name, match))
        return Rules(self.exception_rules, (rule, *self.result_rules))

    def translate_exception(self, exc: BaseException, *, idempotent: bool = True) -> Translation:
        """The structured error for ``exc``: ``Fail`` as raised, else the first matching rule, else internal."""
        if isinstance(exc, Fail):
            error = exc.error if idempotent else exc.error.downgraded()
            return Translation(error, "Fail")
        for rule in self.exception_rules:
            try:
                if not rule.applies(exc):
                    continue
                return Translation(_build(rule.code, rule.message, rule.context, exc, idempotent), rule.name)
            except Exception as broken:  # a broken rule must never break the call
                log.warning("rule_failed", rule=rule.name, error_type=type(broken).__name__)
                break
        return Translation(ToolError.of(Code.INTERNAL_ERROR, idempotent=idempotent), None, unmapped=True)

    def translate_result(self, value: object, *, idempotent: bool = True) -> Translation | None:
        """``None`` when ``value`` is not an error; else the structured error its first matching rule gives."""
        for rule in self.result_rules:
            try:
                if not rule.match(value):
                    continue
                if rule.code is None:
                    error = ToolError.of(Code.INTERNAL_ERROR, idempotent=idempotent)
                    return Translation(error, rule.name, unmapped=True)
                return Translation(_build(rule.code, rule.message, rule.context, value, idempotent), rule.name)
            except Exception as broken:
                log.warning("rule_failed", rule=rule.name, error_type=type(broken).__name__)
                error = ToolError.of(Code.INTERNAL_ERROR, idempotent=idempotent)
                return Translation(error, rule.name, unmapped=True)
        return None


def _build(
    code: Code, message: str | Callable[[Any], str] | None, context: Extractor | None, source: Any,
    idempotent: bool,
) -> ToolError:
    ctx = dict(context(source) or {}) if context is not None else None
    if callable(message):
        text: str | None = scrub_text(message(source))
    elif message is not None:
        # Filled from the redacted context: a credential in a context value must not reach the model through the
        # message while ``context`` shows it redacted.
        safe = to_jsonable(ctx or {})
        text = message.format_map(_Defaulting(safe if isinstance(safe, dict) else {}))
    else:
        text = None
    return ToolError.of(code, text, idempotent=idempotent, context=ctx)


class _Defaulting(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


def _compile(pattern: str | None) -> re.Pattern[str] | None:
    return re.compile(pattern, re.IGNORECASE) if pattern is not None else None


def _rule_name(name: str | None, match: object) -> str:
    """A given name must be storable (a clear error at ``on``); a derived one is made storable."""
    if name is not None:
        return check_name(name, "the rule name", 'Rules.default().on(KeyError, "not_found", name="missing-key")')
    return storable_name(_name(match))


def _name(match: object) -> str:
    if isinstance(match, type):
        return match.__name__
    if isinstance(match, tuple):
        return "|".join(t.__name__ for t in match)
    if isinstance(match, str):
        return f"text~{match}"
    return getattr(match, "__name__", type(match).__name__)


def _status_context(value: object) -> dict[str, Any]:
    return {"status": status_of(value)}


# ---------------------------------------------------------------- the built-in rules


def _json_context(exc: BaseException) -> dict[str, Any]:
    assert isinstance(exc, json.JSONDecodeError)
    return {"line": exc.lineno, "column": exc.colno, "problem": exc.msg}


def _unicode_context(exc: BaseException) -> dict[str, Any]:
    assert isinstance(exc, UnicodeError)
    return {"encoding": getattr(exc, "encoding", None)}


_DEFAULT_EXCEPTION_RULES: Final[tuple[ExceptionRule, ...]] = (
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

_STATUS_TO_CODE: Final[tuple[tuple[tuple[int, ...], Code], ...]] = (
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

#: The phrase table as (pattern, code) pairs, searched in the error text with URLs and paths masked.
_TEXT_TO_CODE: Final[tuple[tuple[str, Code], ...]] = tuple((p.pattern.pattern, p.code) for p in PHRASES)


def phrase_matches(phrase: Phrase) -> ValueMatch:
    """A predicate: the value is error-shaped and its error text, URLs and paths masked, reads as ``phrase``."""

    def matcher(value: object) -> bool:
        if not looks_like_error(value):
            return False
        text = error_text(value)
        return text is not None and phrase.pattern.search(mask_locations(text)) is not None

    matcher.__name__ = f"text:{phrase.code.value}"
    return matcher


_DEFAULT_RESULT_RULES: Final[tuple[ResultRule, ...]] = (
    *(ResultRule(status_in(*statuses), code, context=_status_context, name=f"status:{code.value}")
      for statuses, code in _STATUS_TO_CODE),
    *(ResultRule(phrase_matches(phrase), phrase.code, name=f"text:{phrase.code.value}") for phrase in PHRASES),
    ResultRule(looks_like_error, None, name="error-shaped"),
)
