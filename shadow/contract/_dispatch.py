"""Result rules read by the value's shape: a run of status rules is one status read, a run of phrase rules one
phrase look-up, instead of every matcher in turn (the first matching rule wins, as in the list)."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from shadow.contract._phrases import Phrase, propose
from shadow.contract._values import STATUS_SETS, error_text, looks_like_error, status_of

if TYPE_CHECKING:
    from shadow.contract._rules import ResultRule

#: The phrase a ``phrase_matches`` predicate looks for (by the predicate; weak: a dropped rule takes its entry along).
PHRASE_OF: Final[weakref.WeakKeyDictionary[Callable[[Any], bool], Phrase]] = weakref.WeakKeyDictionary()


class Block:
    """A run of consecutive rules whose matchers read one shape of the value: the first rule that matches is
    found with one read of that shape (``find``); ``rules`` is the run, in order."""

    __slots__ = ("by_key", "kind", "rules")

    def __init__(self, kind: str, rules: Sequence[ResultRule], keys: Sequence[object]) -> None:
        self.kind = kind  # "status" or "phrase"
        self.rules = tuple(rules)
        self.by_key: dict[object, ResultRule] = {}
        for rule, key in zip(rules, keys, strict=True):
            for one in (key if isinstance(key, frozenset) else (key,)):
                self.by_key.setdefault(one, rule)  # the first rule of the run for each key wins

    def find(self, value: object) -> ResultRule | None:
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


Step: TypeAlias = "ResultRule | Block"


def _key(rule: ResultRule) -> tuple[str, object] | None:
    """How a rule's matcher reads the value, when it is one of the built-in predicates; None otherwise."""
    try:
        statuses = STATUS_SETS.get(rule.match)
        if statuses is not None:
            return "status", statuses
        phrase = PHRASE_OF.get(rule.match)
    except TypeError:  # a matcher that cannot be weakly referenced is no built-in predicate
        return None
    return None if phrase is None else ("phrase", id(phrase))


def plan(rules: Sequence[ResultRule]) -> tuple[Step, ...]:
    """``rules`` as steps: runs of two or more rules of one kind as a ``Block``, any other rule as itself."""
    steps: list[Step] = []
    run: list[ResultRule] = []
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
