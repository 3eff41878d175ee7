"""Logged errors judged by today's rules: each distinct legacy outcome translated again, counted per row."""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

from shadow.contract._author import SHOWN_EXCEPTIONS
from shadow.contract._builtin import PROGRAMMING_ERRORS
from shadow.contract._rules import Rules
from shadow.normalize._mcp import is_logged_result, logged_result_value, mcp

#: What the call log stores for a raised exception: ``{"exception": TYPE, "message": TEXT}``, with ``"shown": true``
#: when the framework showed its text to the model (FastMCP without masking).
_EXCEPTION_KEYS: Final = frozenset({"exception", "message"})
_SHOWN_KEYS: Final = frozenset({"exception", "message", "shown"})


@dataclass(frozen=True, slots=True)
class Retranslated:
    """How today's rules read the logged errors: counts, the codes they give, and what could not be read."""

    errors: int
    unmapped: int
    no_longer_errors: int
    codes: dict[str, int]
    distinct: int


def retranslate(rows: Iterable[tuple[Any, int]], rules: Rules) -> Retranslated:
    """Translate each distinct logged legacy payload (with how many error rows hold it) with ``rules``."""
    tally, distinct = _Tally(), 0
    classes: dict[str, type[BaseException]] = {}
    for payload, count in rows:
        distinct += 1
        tally.add(_translate(payload, rules, classes), count)
    return tally.result(distinct)


def merged(rows: Iterable[tuple[Any, int]]) -> list[tuple[Any, int]]:
    """Equal logged payloads (decoded JSON, compared as canonical JSON) merged, their counts added: each is
    translated once."""
    counts: dict[str, int] = {}
    for payload, count in rows:
        key = json.dumps(payload, sort_keys=True, default=str)
        counts[key] = counts.get(key, 0) + count
    return [(json.loads(key), n) for key, n in counts.items()]


def retranslate_by_tool(rows: Iterable[Mapping[str, Any]], rules: Rules, *, shapes: bool = False,
                        ) -> tuple[dict[str, Retranslated], dict[str, list[Mapping[str, Any]]] | None]:
    """Per tool, its logged errors translated again (``report_error_outcomes`` rows: tool, the legacy payload as
    JSON text, how many errors hold it): what the report and the dashboard judge with today's rules. With
    ``shapes``, also per tool the rows those rules leave unmapped (the report's unmapped shapes as they see them).
    Each distinct payload is translated once, whichever tools logged it."""
    seen: dict[str, tuple[str, bool] | None] = {}
    classes: dict[str, type[BaseException]] = {}
    tallies: dict[str, _Tally] = {}
    left: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        text = r["legacy_payload"]
        payload = json.loads(text) if isinstance(text, str) else text
        key = json.dumps(payload, sort_keys=True, default=str)
        if key not in seen:
            seen[key] = _translate(payload, rules, classes)
        tool, errors = str(r["tool"]), int(r["errors"])
        tally = tallies.setdefault(tool, _Tally())
        tally.keys.add(key)
        if tally.add(seen[key], errors) and shapes:
            left.setdefault(tool, []).append({"legacy_payload": text, "errors": errors})
    again = {tool: t.result(len(t.keys)) for tool, t in tallies.items()}
    return again, (left if shapes else None)


@dataclass(slots=True)
class _Tally:
    """Counts while logged errors are read again (one tool's, or all those given)."""

    errors: int = 0
    unmapped: int = 0
    gone: int = 0
    codes: dict[str, int] = field(default_factory=dict)
    keys: set[str] = field(default_factory=set)  # the distinct payloads seen (``retranslate_by_tool``)

    def add(self, found: tuple[str, bool] | None, count: int) -> bool:
        """Count ``count`` errors the rules read as ``found`` (``None``: no longer errors); whether unmapped."""
        if found is None:
            self.gone += count
            return False
        code, is_unmapped = found
        self.errors += count
        self.codes[code] = self.codes.get(code, 0) + count
        if is_unmapped:
            self.unmapped += count
        return is_unmapped

    def result(self, distinct: int) -> Retranslated:
        return Retranslated(self.errors, self.unmapped, self.gone, self.codes, distinct)


def _translate(payload: Any, rules: Rules, classes: dict[str, type[BaseException]]) -> tuple[str, bool] | None:
    """``(code, unmapped)`` today's rules give a logged legacy payload (decoded JSON); ``None`` when they read no
    error."""
    value = payload  # as the call log's JSON column gives it back
    if isinstance(value, dict) and set(value) in (_EXCEPTION_KEYS, _SHOWN_KEYS) and isinstance(value["exception"], str):
        exc = _exception(value["exception"], str(value["message"] or ""), rules, classes)
        found = rules.translate_exception(exc, shown=value.get("shown") is True)
    elif is_logged_result(value):  # a result shadow proxy logged: read as the proxy read it, with its rules
        translated = _as_proxy(rules).translate_result(logged_result_value(value))
        if translated is None:
            return None
        found = translated
    else:
        translated = rules.translate_result(value)
        if translated is None:
            return None
        found = translated
    return found.error.code.value, found.unmapped


def _as_proxy(rules: Rules) -> Rules:
    """The rules ``shadow proxy`` runs with these: yours first, then the MCP rules, then the built-in ones."""
    found = _PROXY_RULES.get(id(rules))
    if found is None or found[0] is not rules:
        if len(_PROXY_RULES) >= 8:  # a process judges with a few sets of rules; never let a long one gather more
            _PROXY_RULES.clear()
        found = _PROXY_RULES[id(rules)] = (rules, rules.without_defaults() + mcp() + Rules.default())
    return found[1]


#: The proxy's rules made of a set of rules (by id, the set kept so its id is not reused).
_PROXY_RULES: dict[int, tuple[Rules, Rules]] = {}


def _exception(name: str, message: str, rules: Rules, classes: dict[str, type[BaseException]]) -> BaseException:
    """An exception standing for one that was logged by type name and scrubbed message: of the built-in type of
    that name, else a subclass of the rules' own type of that name (so a rule matching by type still applies), else
    of the framework's model-facing type of that name; its ``str`` is the logged message."""
    cls = classes.get(name)
    if cls is None:
        cls = classes[name] = _stand_in(name, rules)
    try:
        exc: BaseException = cls.__new__(cls)
        exc.args = (message,)
    except TypeError:  # a base that cannot be made without its own arguments
        exc = Exception(message)
    return exc


def _stand_in(name: str, rules: Rules) -> type[BaseException]:
    base: type[BaseException] = Exception
    module, qualname = "shadow.logged", name
    found = getattr(builtins, name, None)
    if found in PROGRAMMING_ERRORS:  # by exact type, as the live call was judged (its text is not read)
        return cast("type[BaseException]", found)
    if isinstance(found, type) and issubclass(found, BaseException):
        base = found
    elif (own := _rule_type(name, rules)) is not None:
        base = own
    else:
        shown = next((n for n in SHOWN_EXCEPTIONS if n.rsplit(".", 1)[-1] == name), None)
        if shown is not None:
            module, qualname = shown.rsplit(".", 1)
    try:
        return type(name, (base,), {"__str__": _logged_text, "__module__": module, "__qualname__": qualname})
    except TypeError:  # a final base
        return type(name, (Exception,), {"__str__": _logged_text, "__module__": module, "__qualname__": qualname})


def _logged_text(self: BaseException) -> str:
    return str(self.args[0]) if self.args else ""


def _rule_type(name: str, rules: Rules) -> type[BaseException] | None:
    """The exception type of that name that one of ``rules`` matches or marks as shown, if any."""
    kinds: list[type[BaseException]] = list(rules.shown_types)
    for rule in rules.exception_rules:
        match = rule.match
        if isinstance(match, type):
            kinds.append(match)
        elif isinstance(match, tuple):
            kinds.extend(match)
    return next((k for k in kinds if k.__name__ == name), None)
