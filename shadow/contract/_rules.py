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
from shadow.contract._author import SHOWN_EXCEPTIONS, fit_message, shown_name
from shadow.contract._codes import Code, spec
from shadow.contract._payloads import Fail, ToolError
from shadow.contract._phrases import PHRASES, Phrase, propose
from shadow.contract._rules_id import fingerprint
from shadow.contract._values import (
    ValueMatch,
    error_text,
    looks_like_error,
    status_in,
    status_of,
    text_matches,
)

__all__ = [  # what other modules import from here, the readers of legacy values included
    "ExceptionRule",
    "ResultRule",
    "Rules",
    "Translation",
    "ValueMatch",
    "error_text",
    "looks_like_error",
    "phrase_matches",
    "status_in",
    "status_of",
    "text_matches",
]

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

    A deliberate error keeps its author's words: a returned error value, and an exception the model is shown (a
    framework's ``ToolError``, ``ToolException``, ``ModelRetry``, or a type marked with ``shown``), is served
    with its own text as the message (scrubbed, fitted to the contract) unless the rule that places it gives a
    message; one no rule places is ``rejected`` / ``ask_user`` and counts as unmapped. Any other exception gets
    its rule's message or the code's default: its text never reaches the model.
    """

    __slots__ = ("_fingerprint", "exception_rules", "result_rules", "shown_types")

    def __init__(
        self,
        exception_rules: Iterable[ExceptionRule] = (),
        result_rules: Iterable[ResultRule] = (),
        *,
        shown: Iterable[type[BaseException]] = (),
    ) -> None:
        self.exception_rules: tuple[ExceptionRule, ...] = tuple(exception_rules)
        self.result_rules: tuple[ResultRule, ...] = tuple(result_rules)
        self.shown_types: tuple[type[BaseException], ...] = tuple(shown)
        self._fingerprint: str | None = None

    @property
    def fingerprint(self) -> str:
        """A short stable hash of these rules (``_rules_id``): computed once, stored with each call they
        translate, so the report can split by rules version."""
        found = self._fingerprint
        if found is None:
            found = self._fingerprint = fingerprint(self)
        return found

    def __add__(self, other: Rules) -> Rules:
        if not isinstance(other, Rules):
            return NotImplemented
        return Rules(self.exception_rules + other.exception_rules, self.result_rules + other.result_rules,
                     shown=self.shown_types + other.shown_types)

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
                     [r for r in self.result_rules if id(r) not in res_defaults], shown=self.shown_types)

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
        return Rules((rule, *self.exception_rules), self.result_rules, shown=self.shown_types)

    def shown(self, *types: type[BaseException]) -> Rules:
        """A copy that treats these exception types as shown to the model (their text written for it, as a
        framework's ``ToolError`` is): served with their own words, placed by the result rules and phrase table,
        ``rejected`` when nothing places them."""
        for kind in types:
            if not (isinstance(kind, type) and issubclass(kind, BaseException)):
                raise TypeError(f"Rules.shown takes exception types, not {kind!r}; "
                                "for example Rules.default().shown(OrderRejected)")
        return Rules(self.exception_rules, self.result_rules, shown=(*self.shown_types, *types))

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
        return Rules(self.exception_rules, (rule, *self.result_rules), shown=self.shown_types)

    def translate_exception(self, exc: BaseException, *, idempotent: bool = True) -> Translation:
        """The structured error for ``exc``: ``Fail`` as raised, else the first matching rule, else internal
        (an exception shown to the model: its text read as a returned error, ``rejected`` when unplaced)."""
        if isinstance(exc, Fail):
            error = exc.error if idempotent else exc.error.downgraded()
            return Translation(error, "Fail")
        shown = self._shown(exc)
        for rule in self.exception_rules:
            try:
                if not rule.applies(exc):
                    continue
                author = fit_message(_text_of(exc)) if shown is not None else None
                return Translation(_build(rule.code, rule.message, rule.context, exc, idempotent, author), rule.name)
            except Exception as broken:  # a broken rule must never break the call
                log.warning("rule_failed", rule=rule.name, error_type=type(broken).__name__)
                break
        if shown is None:
            return Translation(ToolError.of(Code.INTERNAL_ERROR, idempotent=idempotent), None, unmapped=True)
        text = _text_of(exc)
        found = self.translate_result({"error": text}, idempotent=idempotent) if text else None
        if found is not None and not found.unmapped:
            return found
        by_type = SHOWN_EXCEPTIONS.get(shown)
        error = ToolError.of(by_type or Code.REJECTED, fit_message(text), idempotent=idempotent)
        return Translation(error, shown.rsplit(".", 1)[-1] if by_type else None, unmapped=by_type is None)

    def _shown(self, exc: BaseException) -> str | None:
        """The name by which ``exc`` is shown to the model (a framework's or a type marked with ``shown``)."""
        if self.shown_types and isinstance(exc, self.shown_types):
            return f"{type(exc).__module__}.{type(exc).__qualname__}"
        return shown_name(exc)

    def translate_result(self, value: object, *, idempotent: bool = True) -> Translation | None:
        """``None`` when ``value`` is not an error; else the structured error its first matching rule gives,
        with the value's own text as the message unless the rule gives one (``rejected`` when unplaced)."""
        for rule in self.result_rules:
            try:
                if not rule.match(value):
                    continue
                author = fit_message(error_text(value))
                if rule.code is None:
                    return Translation(ToolError.of(Code.REJECTED, author, idempotent=idempotent), rule.name,
                                       unmapped=True)
                return Translation(_build(rule.code, rule.message, rule.context, value, idempotent, author), rule.name)
            except Exception as broken:
                log.warning("rule_failed", rule=rule.name, error_type=type(broken).__name__)
                return Translation(_rejected(value, idempotent), rule.name, unmapped=True)
        return None


def _text_of(exc: BaseException) -> str:
    """``str(exc)``, or an empty text when the exception's own ``__str__`` fails."""
    try:
        return str(exc)
    except Exception:
        return ""


def _rejected(value: object, idempotent: bool) -> ToolError:
    """For a value a broken rule was judging: ``rejected`` in the value's own words when it reads as an error,
    else ``internal_error`` (nothing says what the value is)."""
    try:
        if looks_like_error(value):
            return ToolError.of(Code.REJECTED, fit_message(error_text(value)), idempotent=idempotent)
    except Exception:
        pass
    return ToolError.of(Code.INTERNAL_ERROR, idempotent=idempotent)


def _build(
    code: Code, message: str | Callable[[Any], str] | None, context: Extractor | None, source: Any,
    idempotent: bool, author: str | None = None,
) -> ToolError:
    """The error a rule gives: its own message (a template filled from the context, or a callable's text), else
    the author's words (``None``: the code's default message)."""
    ctx = dict(context(source) or {}) if context is not None else None
    if callable(message):
        text: str | None = scrub_text(message(source))
    elif message is not None:
        # Filled from the redacted context: a credential in a context value must not reach the model through the
        # message while ``context`` shows it redacted.
        safe = to_jsonable(ctx or {})
        text = message.format_map(_Defaulting(safe if isinstance(safe, dict) else {}))
    else:
        text = author
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
        return text is not None and propose(text) is phrase

    matcher.__name__ = f"text:{phrase.code.value}"
    return matcher


_DEFAULT_RESULT_RULES: Final[tuple[ResultRule, ...]] = (
    *(ResultRule(status_in(*statuses), code, context=_status_context, name=f"status:{code.value}")
      for statuses, code in _STATUS_TO_CODE),
    *(ResultRule(phrase_matches(phrase), phrase.code, name=f"text:{phrase.code.value}") for phrase in PHRASES),
    ResultRule(looks_like_error, None, name="error-shaped"),
)
