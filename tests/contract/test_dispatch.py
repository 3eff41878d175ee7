"""Result rules read by the value's shape: one status read and one phrase look-up per run of built-in rules, with
the same answer as asking every rule in turn (issue 32)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from shadow.contract import _dispatch
from shadow.contract._codes import Code
from shadow.contract._payloads import ToolError
from shadow.contract._rule import acting as _acting
from shadow.contract._rules import Rules, Translation, _build, _rejected, error_text, fit_message, status_in
from shadow.contract._values import STATUS_KEYS
from tests._real_corpus import entries


def _in_turn(rules: Rules, value: object) -> Translation | None:
    """The rules asked one by one, first match wins: what ``translate_result`` did before it dispatched."""
    for rule in rules.result_rules:
        try:
            if not rule.match(value):
                continue
            author = fit_message(error_text(value))
            if rule.code is None:
                return Translation(ToolError.of(Code.REJECTED, author), rule.name, unmapped=True)
            error = _build(rule.code, rule.message, rule.context, value, True, author)
            return Translation(_acting(error, rule.action), rule.name)
        except Exception:
            return Translation(_rejected(value, True), rule.name, unmapped=True)
    return None


class _Hostile(Mapping[str, Any]):
    """A mapping whose reads of a status key raise: the run's rules are asked one by one then."""

    def __getitem__(self, key: str) -> Any:
        if key in STATUS_KEYS:
            raise RuntimeError("no reading this")
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _values() -> list[object]:
    texts = [e["text"] for e in entries()]
    values: list[object] = [*texts, *({"error": t} for t in texts), *({"message": t, "ok": False} for t in texts)]
    for status in (200, 302, 400, 401, 403, 404, 408, 409, 410, 412, 413, 415, 422, 429, 499, 500, 501, 502, 503,
                   504, 599, "404", True):
        values += [{"status": status}, {"error": {"code": status, "message": "Bad request"}},
                   {"status_code": status, "error": "Timed out"}]
    values += [{"error": "Bad request"}, {"status": "failed"}, {"ok": True, "data": 1}, None, 3, [1], "fine",
               {"errors": [{"message": "rate limit exceeded"}]}, _Hostile(), {"error": ""}]
    return values


def _key(found: Translation | None) -> object:
    return None if found is None else (found.error.payload(), found.rule, found.unmapped)


@pytest.mark.parametrize("rules", [
    Rules.default(),
    Rules.default().on_result(status_in(404), "conflict", name="mine").on_result("quota", "quota_exceeded"),
    Rules.default() + Rules.default(),
], ids=["default", "user rules first", "twice"])
def test_dispatch_gives_what_asking_every_rule_in_turn_gives(rules: Rules) -> None:
    values = _values()
    assert len(values) > 2000
    assert [_key(rules.translate_result(v)) for v in values] == [_key(_in_turn(rules, v)) for v in values]
    assert any(isinstance(step, _dispatch.Block) for step in rules._plan or ())


def test_an_error_value_is_read_once_not_by_every_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: dict[str, int] = {"status": 0, "phrase": 0}
    status_of, propose = _dispatch.status_of, _dispatch.propose

    def counted_status(value: object) -> int | None:
        reads["status"] += 1
        return status_of(value)

    def counted_propose(text: str) -> Any:
        reads["phrase"] += 1
        return propose(text)

    monkeypatch.setattr(_dispatch, "status_of", counted_status)
    monkeypatch.setattr(_dispatch, "propose", counted_propose)
    found = Rules.default().translate_result({"error": "Bad request"})
    assert found is not None and found.error.code is Code.VALIDATION_ERROR
    assert reads == {"status": 1, "phrase": 1}
