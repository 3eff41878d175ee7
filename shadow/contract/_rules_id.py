"""A rules object's fingerprint: a short stable hash of which rules it holds, stored with each call it translated."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from shadow.contract._rule import ExceptionRule, ResultRule

#: Hex digits kept: 48 bits, plenty to tell apart the rules versions one deployment ever runs.
LENGTH: Final = 12


def fingerprint(exception_rules: Sequence[ExceptionRule], result_rules: Sequence[ResultRule],
                shown_types: Sequence[type[BaseException]], *, text_is_data: bool = False) -> str:
    """The fingerprint of a ``Rules`` holding these: shadow's version (the built-in rules are those of the installed
    release) and every rule in order: its name, code, pattern, what it matches, its message and context; the
    shown types; and whether returned strings are data (``Rules.text_as_data``).

    Stable across processes and machines (no object ids), so records of the same rules group together."""
    described: dict[str, object] = {
        "shadow": _version(),
        "exceptions": [_exception_rule(r) for r in exception_rules],
        "results": [_result_rule(r) for r in result_rules],
        "shown": [_name(t) for t in shown_types],
    }
    if text_is_data:  # a key only when set: the fingerprints of rules without it stay what they were
        described["text_is_data"] = True
    text = json.dumps(described, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()[:LENGTH]


@functools.cache
def _version() -> str:
    """The release of shadow (its built-in rules are that release's): ``shadow.__version__``, which a test keeps
    equal to the packaged version. Never ``importlib.metadata``: that imports ``email``, ``zipfile`` and more as it
    reads, on the writer's thread, where an import held across a ``fork`` could hang the child's writer. The package
    is imported before any of its modules (and read here at the first fingerprint, after it), so nothing is imported
    here and no module depends on the package's front."""
    return str(getattr(sys.modules["shadow"], "__version__", "unknown"))


def _exception_rule(rule: ExceptionRule) -> list[Any]:
    match = rule.match
    kinds = [_name(t) for t in match] if isinstance(match, tuple) else [_name(match)]
    pattern = rule.pattern.pattern if isinstance(rule.pattern, re.Pattern) else None
    action = [rule.action.value] if rule.action is not None else []  # a rule's own next_action, when it has one
    return [rule.name, rule.code.value, kinds, pattern, _name(rule.message), _name(rule.context), *action]


def _result_rule(rule: ResultRule) -> list[Any]:
    code = rule.code.value if rule.code is not None else None
    action = [rule.action.value] if rule.action is not None else []
    return [rule.name, code, _name(rule.match), _name(rule.message), _name(rule.context), *action]


def _name(thing: object) -> str | None:
    """A text naming ``thing`` the same in every process: a string as it is, a type or function by module and
    qualified name (a regex matcher by its pattern, through the rule's name)."""
    if thing is None or isinstance(thing, str):
        return thing
    module = getattr(thing, "__module__", None) or ""
    qualname = getattr(thing, "__qualname__", None) or type(thing).__qualname__
    return f"{module}.{qualname}"
