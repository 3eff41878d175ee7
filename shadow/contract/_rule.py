"""One translation rule and what it gives: a structured error, the rule's name, whether it really mapped."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from shadow.contract._codes import Code, NextAction
from shadow.contract._payloads import ToolError, without_retry_advice
from shadow.contract._values import ValueMatch

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
    action: NextAction | None = None  # the rule's own next_action, where it is not the code's default

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
    action: NextAction | None = None  # the rule's (or phrase's) own next_action, where not the code's default


def acting(error: ToolError, action: NextAction | None, idempotent: bool = True) -> ToolError:
    """``error`` with a rule's own ``next_action`` (a retry only for an idempotent tool, else ``ask_user``)."""
    if action is NextAction.RETRY and not idempotent:
        action = NextAction.ASK_USER
    if action is None or action is error.next_action:
        return error
    message = error.message if action is NextAction.RETRY else without_retry_advice(error.message)
    return ToolError(error.code, message, action is NextAction.RETRY, action, error.context)


def rule_action(value: NextAction | str | None) -> NextAction | None:
    """A rule's ``next_action=``, checked when the rule is made."""
    if value is None:
        return None
    try:
        return NextAction(value)
    except ValueError:
        raise ValueError(f"next_action must be one of {', '.join(a.value for a in NextAction)}, not {value!r}; for "
                         "example next_action='ask_user'") from None
