"""Ordered translation rules: exceptions and legacy error values to structured errors, in one place."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, Final

from shadow._logs import get_logger
from shadow._names import check_name, storable_name
from shadow._redact import scrub_text, to_jsonable
from shadow.contract._author import SHOWN_EXCEPTIONS, fit_message, shown_name
from shadow.contract._builtin import EXCEPTION_RULES, PROGRAMMING_ERRORS, RESULT_RULES, phrase_matches
from shadow.contract._codes import Code, NextAction, spec
from shadow.contract._dispatch import Block, plan
from shadow.contract._payloads import Fail, ToolError
from shadow.contract._rule import ExceptionRule, ExcMatch, Extractor, ResultRule, Translation, acting, rule_action
from shadow.contract._rules_id import fingerprint
from shadow.contract._values import (
    ValueMatch,
    author_text,
    error_text,
    exception_status,
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
_BUILT_IN_RESULTS: Final = frozenset(id(rule) for rule in RESULT_RULES)
#: The built-in exception rules, whose messages are generic: an exception shown to the model keeps its own words.
_BUILT_IN_EXCEPTIONS: Final = frozenset(id(rule) for rule in EXCEPTION_RULES)

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

    __slots__ = ("_fingerprint", "_plan", "exception_rules", "result_rules", "shown_types", "text_is_data")

    def __init__(
        self,
        exception_rules: Iterable[ExceptionRule] = (),
        result_rules: Iterable[ResultRule] = (),
        *,
        shown: Iterable[type[BaseException]] = (),
        text_is_data: bool = False,
    ) -> None:
        self.exception_rules: tuple[ExceptionRule, ...] = tuple(exception_rules)
        self.result_rules: tuple[ResultRule, ...] = tuple(result_rules)
        self.shown_types: tuple[type[BaseException], ...] = tuple(shown)
        #: A returned string is the tool's data, never read by the built-in rules (``text_as_data``).
        self.text_is_data = text_is_data
        # the result rules as dispatch steps, made on first use
        self._plan: tuple[ResultRule | Block[ResultRule], ...] | None = None
        self._fingerprint: str | None = None

    @property
    def fingerprint(self) -> str:
        """A short stable hash of these rules (``_rules_id``): computed once, stored with each call they
        translate, so the report can split by rules version."""
        found = self._fingerprint
        if found is None:
            found = self._fingerprint = fingerprint(self.exception_rules, self.result_rules, self.shown_types,
                                                    text_is_data=self.text_is_data)
        return found

    def __add__(self, other: Rules) -> Rules:
        if not isinstance(other, Rules):
            return NotImplemented
        return Rules(self.exception_rules + other.exception_rules, self.result_rules + other.result_rules,
                     shown=self.shown_types + other.shown_types, text_is_data=self.text_is_data or other.text_is_data)

    def __len__(self) -> int:
        return len(self.exception_rules) + len(self.result_rules)

    def __repr__(self) -> str:
        return f"Rules({len(self.exception_rules)} exception rules, {len(self.result_rules)} result rules)"

    @classmethod
    def default(cls, *, results: bool = True) -> Rules:
        """The built-in rules: stdlib exceptions, and (unless ``results=False``) legacy error values."""
        return cls(EXCEPTION_RULES, RESULT_RULES if results else ())

    def without_defaults(self) -> Rules:
        """A copy without the built-in rules, keeping the order of the rest: what a stack that adds its own
        rules and ``Rules.default()`` after them (the proxy, ``shadow import``) takes from a user's
        ``Rules.default().on_result(...)``, so the built-in text rules never shadow the MCP ones."""
        exc_defaults = {id(r) for r in EXCEPTION_RULES}
        return Rules([r for r in self.exception_rules if id(r) not in exc_defaults],
                     [r for r in self.result_rules if id(r) not in _BUILT_IN_RESULTS], shown=self.shown_types,
                     text_is_data=self.text_is_data)

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
        next_action: NextAction | str | None = None,
    ) -> Rules:
        """A copy with an exception rule put first (it wins over the existing ones). ``next_action`` replaces the
        code's default (``"ask_user"`` for a ``permission_denied`` the model can answer with another input; a
        ``"retry"`` is served ``ask_user`` for a tool that is not idempotent)."""
        rule = ExceptionRule(match, spec(code).code, message, context, _compile(pattern), _rule_name(name, match),
                             rule_action(next_action))
        return Rules((rule, *self.exception_rules), self.result_rules, shown=self.shown_types,
                     text_is_data=self.text_is_data)

    def shown(self, *types: type[BaseException]) -> Rules:
        """A copy that treats these exception types as shown to the model (their text written for it, as a
        framework's ``ToolError`` is): served with their own words, placed by the result rules and phrase table,
        ``rejected`` when nothing places them."""
        for kind in types:
            if not (isinstance(kind, type) and issubclass(kind, BaseException)):
                raise TypeError(f"Rules.shown takes exception types, not {kind!r}; "
                                "for example Rules.default().shown(OrderRejected)")
        return Rules(self.exception_rules, self.result_rules, shown=(*self.shown_types, *types),
                     text_is_data=self.text_is_data)

    def text_as_data(self) -> Rules:
        """A copy that takes every string the tool returns as its data: the built-in rules never read one as an
        error (no ``Error:`` opening, no "Could not ..."), so a tool whose result is a document's, a page's or a
        file's own text is never served an error for what that text says. Your own rules still read strings
        (``on_result("^Timeout")``); an error object (``{"error": ...}``) and raised exceptions are read as
        before."""
        return Rules(self.exception_rules, self.result_rules, shown=self.shown_types, text_is_data=True)

    def on_result(
        self,
        match: ValueMatch | str,
        code: Code | str | None,
        message: str | Callable[[Any], str] | None = None,
        *,
        context: Extractor | None = None,
        name: str | None = None,
        next_action: NextAction | str | None = None,
    ) -> Rules:
        """A copy with a result rule put first; ``match`` is a predicate or a regex searched in the result's text;
        ``next_action`` replaces the code's default (as for ``on``).

        A regex decides what *is* an error: it matches a plain text result (``"Database error: no such
        table"``, with no error flag or prefix), an object's message (``{"status": "task_not_found", "message":
        "No such task found"}``) and the error text of an error-shaped value."""
        predicate = text_matches(match, plain=True) if isinstance(match, str) else match
        resolved = spec(code).code if code is not None else None
        if next_action is not None and resolved is None:
            raise ValueError("on_result(..., None, next_action=...): an error no rule places is served rejected with "
                             "ask_user; give a code to choose the next action")
        rule = ResultRule(predicate, resolved, message, context, _rule_name(name, match), rule_action(next_action))
        return Rules(self.exception_rules, (rule, *self.result_rules), shown=self.shown_types,
                     text_is_data=self.text_is_data)

    def translate_exception(self, exc: BaseException, *, idempotent: bool = True,
                            shown: bool = False) -> Translation:
        """The structured error for ``exc``: ``Fail`` as raised, else the first matching rule, else internal
        (an exception shown to the model: its text read as a returned error, ``rejected`` when unplaced).

        ``shown``: the framework showed this exception's text to the model in legacy (FastMCP does, for any
        exception, unless it masks error details), so its words are the author's, as a framework's ``ToolError``'s
        are. Python's own exceptions about a bug (``PROGRAMMING_ERRORS``, by exact type) are read the same way (a
        calculator's "division by zero" is ``validation_error``), but stay ``internal_error``, in those words,
        when nothing places them."""
        if isinstance(exc, Fail):
            error = exc.error if idempotent else exc.error.downgraded()
            return Translation(error, "Fail")
        shown_as = self._shown(exc)
        bug = shown_as is None and type(exc) in PROGRAMMING_ERRORS
        if shown_as is None and shown:
            shown_as = f"{type(exc).__module__}.{type(exc).__qualname__}"
        return self._translated(exc, idempotent, shown_as, Code.INTERNAL_ERROR if bug else Code.REJECTED)

    def _translated(self, exc: BaseException, idempotent: bool, shown: str | None,
                    unplaced: Code = Code.REJECTED) -> Translation:
        """``translate_exception`` past ``Fail``: ``shown`` is the name the exception was shown to the model by;
        ``unplaced``, the code of a shown exception nothing places."""
        for rule in self.exception_rules:
            try:
                if not rule.applies(exc):
                    continue
                author = fit_message(_shown_text(exc, shown)) if shown is not None else None
                # a built-in rule's generic message says less than the words the model read (a reviewed rule's more)
                message = None if author is not None and id(rule) in _BUILT_IN_EXCEPTIONS else rule.message
                error = _build(rule.code, message, rule.context, exc, idempotent, author)
                return Translation(acting(error, rule.action, idempotent), rule.name)
            except Exception as broken:  # a broken rule must never break the call
                log.warning("rule_failed", rule=rule.name, error_type=type(broken).__name__)
                break
        if shown is None:
            return self._read(exc, idempotent) or Translation(
                ToolError.of(Code.INTERNAL_ERROR, idempotent=idempotent), None, unmapped=True)
        text = _shown_text(exc, shown)
        found = self.translate_result({"error": text}, idempotent=idempotent) if text else None
        if found is not None and not found.unmapped:
            return found
        by_type = SHOWN_EXCEPTIONS.get(shown)
        error = ToolError.of(by_type or unplaced, fit_message(text), idempotent=idempotent)
        return Translation(error, shown.rsplit(".", 1)[-1] if by_type else None, unmapped=by_type is None)

    def _read(self, exc: BaseException, idempotent: bool) -> Translation | None:
        """A plain exception (the model never saw it) placed by the result rules reading its text, or by the HTTP
        status it carries: served with the code's own message (or a rule's), never the exception's words, and still
        counted unmapped (it gates cutover and ``rules suggest`` drafts a rule for it)."""
        if type(exc) in PROGRAMMING_ERRORS:  # Python's own words about a bug say nothing about the call
            return None
        try:
            text, status = _text_of(exc), exception_status(exc)
        except Exception:  # a hostile attribute: nothing to read
            return None
        value: dict[str, object] = {"error": text}  # its words first ("quota used up" beats a bare 429)
        found = self.translate_result(value, idempotent=idempotent) if text else None
        if (found is None or found.unmapped) and status is not None:
            value["status"] = status
            found = self.translate_result(value, idempotent=idempotent)
        if found is None or found.unmapped:
            return None
        error = found.error
        if error.message == fit_message(error_text(value)):  # the rule kept the text: the model gets the code's own
            error = acting(ToolError.of(error.code, idempotent=idempotent, context=error.context), error.next_action,
                            idempotent)
        # still unmapped: the code is the table's reading, the message a generic one (a reviewed rule does better)
        return Translation(error, f"read:{found.rule}", unmapped=True)

    def _shown(self, exc: BaseException) -> str | None:
        """The name by which ``exc`` is shown to the model (a framework's or a type marked with ``shown``)."""
        if self.shown_types and isinstance(exc, self.shown_types):
            return f"{type(exc).__module__}.{type(exc).__qualname__}"
        return shown_name(exc)

    def translate_result(self, value: object, *, idempotent: bool = True) -> Translation | None:
        """``None`` when ``value`` is not an error; else the structured error its first matching rule gives,
        with the value's own text as the message unless the rule gives one (``rejected`` when unplaced).

        Runs of built-in status and phrase rules are read by the value's shape, once per run (``_dispatch``);
        when reading the value raises, the run's rules are asked one by one, as any other rule is."""
        if self.text_is_data and isinstance(value, str | bytes):
            return self._own_rules_on_text(value, idempotent)
        steps = self._plan
        if steps is None:
            steps = self._plan = plan(self.result_rules)
        for step in steps:
            if isinstance(step, Block):
                try:
                    found = step.find(value)
                except Exception:
                    found = None
                    for rule in step.rules:
                        translated = self._matched(rule, value, idempotent)
                        if translated is not None:
                            return translated
                if found is not None:
                    return self._matched(found, value, idempotent, matched=True)
                continue
            translated = self._matched(step, value, idempotent)
            if translated is not None:
                return translated
        return None

    def _own_rules_on_text(self, value: str | bytes, idempotent: bool) -> Translation | None:
        """A returned string under ``text_as_data``: only rules that are not built in may call it an error."""
        for rule in self.result_rules:
            if id(rule) not in _BUILT_IN_RESULTS:
                translated = self._matched(rule, value, idempotent)
                if translated is not None:
                    return translated
        return None

    @staticmethod
    def _matched(rule: ResultRule, value: object, idempotent: bool, *, matched: bool = False) -> Translation | None:
        """The translation ``rule`` gives ``value``, or ``None`` when it does not match (``matched``: known to)."""
        try:
            if not matched and not rule.match(value):
                return None
            author = fit_message(author_text(value))
            if rule.code is None:
                return Translation(ToolError.of(Code.REJECTED, author, idempotent=idempotent), rule.name,
                                   unmapped=True)
            error = _build(rule.code, rule.message, rule.context, value, idempotent, author)
            return Translation(acting(error, rule.action, idempotent), rule.name)
        except Exception as broken:
            log.warning("rule_failed", rule=rule.name, error_type=type(broken).__name__)
            return Translation(_rejected(value, idempotent), rule.name, unmapped=True)


def _shown_text(exc: BaseException, shown: str) -> str:
    """The words a shown exception gives the model: its text, after its class's name when the text is a bare
    value (``InvalidUrlClientError: not%20a%20url``, as LangGraph shows ``repr(e)``); a framework's own error type
    (``ToolError``, ``ModelRetry``) is its text alone; a JSON error object as the text (an MCP server's
    ``{"success": false, "error": "..."}`` raised by an adapter) is read for its message."""
    text = _text_of(exc)
    text = error_text(text) or text
    if shown in SHOWN_EXCEPTIONS or " " in text.strip() or not text.strip():
        return text
    return f"{type(exc).__name__}: {text.strip()}"


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
            return ToolError.of(Code.REJECTED, fit_message(author_text(value)), idempotent=idempotent)
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
