"""Result rules read by the value's shape, a run of them at a time, instead of every matcher in turn.

A run of status rules is one status read, a run of phrase rules one phrase look-up; the first matching rule wins,
as in the list.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, Final, Generic, Protocol, TypeVar

from shadow.contract._phrase import Phrase
from shadow.contract._reading import propose
from shadow.contract._values import STATUS_SETS, error_text, looks_like_error, status_of


class Matching(Protocol):
    """What dispatch reads of a result rule: its matcher (``_rules.ResultRule`` is one)."""

    @property
    def match(self) -> Callable[[Any], bool]: ...


R = TypeVar("R", bound=Matching)

#: The phrase a ``phrase_matches`` predicate looks for (by the predicate; weak: a dropped rule takes its entry along).
PHRASE_OF: Final[weakref.WeakKeyDictionary[Callable[[Any], bool], Phrase]] = weakref.WeakKeyDictionary()


class Block(Generic[R]):
    """A run of consecutive rules whose matchers read one shape of the value: the first rule that matches is
    found with one read of that shape (``find``); ``rules`` is the run, in order."""

    __slots__ = ("by_key", "kind", "rules")

    def __init__(self, kind: str, rules: Sequence[R], keys: Sequence[object]) -> None:
        self.kind = kind  # "status" or "phrase"
        self.rules = tuple(rules)
        self.by_key: dict[object, R] = {}
        for rule, key in zip(rules, keys, strict=True):
            for one in (key if isinstance(key, frozenset) else (key,)):
                self.by_key.setdefault(one, rule)  # the first rule of the run for each key wins

    def find(self, value: object) -> R | None:
        """The first rule of the run that matches ``value``; raises what reading the value raises."""
        if self.kind == "status":
            return self.by_key.get(status_of(value))
        if not looks_like_error(value):
            return None
        text = error_text(value)
        if text is None:
            return None
        phrase = propose(text)
        return None if phrase is None else self.by_key.get(id(phrase))


def _key(rule: Matching) -> tuple[str, object] | None:
    """How a rule's matcher reads the value, when it is one of the built-in predicates; None otherwise."""
    try:
        statuses = STATUS_SETS.get(rule.match)
        if statuses is not None:
            return "status", statuses
        phrase = PHRASE_OF.get(rule.match)
    except TypeError:  # a matcher that cannot be weakly referenced is no built-in predicate
        return None
    return None if phrase is None else ("phrase", id(phrase))


def plan(rules: Sequence[R]) -> tuple[R | Block[R], ...]:
    """``rules`` as steps: runs of two or more rules of one kind as a ``Block``, any other rule as itself."""
    steps: list[R | Block[R]] = []
    run: list[R] = []
    keys: list[object] = []
    kind: str | None = None

    def close() -> None:
        if kind is not None and len(run) > 1:
            steps.append(Block(kind, run, keys))
        else:
            steps.extend(run)
        run.clear()
        keys.clear()

    for rule in rules:
        found = _key(rule)
        if found is None or found[0] != kind:
            close()
            kind = found[0] if found is not None else None
        if found is None:
            steps.append(rule)
            continue
        run.append(rule)
        keys.append(found[1])
    close()
    return tuple(steps)
