"""Tool, rule and session names the call log cannot store are refused where they are given, with a clear error."""

from __future__ import annotations

import pytest

import shadow
from shadow import Code, Rules

BAD = {"too long": "t" * 201, "NUL": "search\x00x", "lone surrogate": "search\ud800"}


@pytest.mark.parametrize("value", BAD.values(), ids=BAD.keys())
def test_a_tool_name_postgresql_cannot_store_is_refused_at_decoration(value: str) -> None:
    with pytest.raises(ValueError, match="the tool name .* for example"):
        shadow.tool(name=value)


@pytest.mark.parametrize("value", BAD.values(), ids=BAD.keys())
def test_a_session_id_postgresql_cannot_store_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="the session id .* for example"), shadow.session(value):
        pass


@pytest.mark.parametrize("value", BAD.values(), ids=BAD.keys())
def test_a_rule_name_postgresql_cannot_store_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="the rule name .* for example"):
        Rules.default().on(KeyError, Code.NOT_FOUND, name=value)
    with pytest.raises(ValueError, match="the rule name"):
        Rules.default().on_result("missing", Code.NOT_FOUND, name=value)


def test_a_derived_rule_name_is_cut_to_fit() -> None:
    rules = Rules.empty().on_result("x" * 400, Code.NOT_FOUND)
    assert len(rules.result_rules[0].name) == 200


def test_names_that_fit_are_accepted_unchanged() -> None:
    @shadow.tool(name="s" * 200)
    def search() -> str:
        return "ok"

    assert search.__shadow_tool__ == "s" * 200
    with shadow.session("é-" * 100) as sid:
        assert sid == "é-" * 100


POSITIONS = {"100,000 characters": ("t" * 100_000, "has 100000 characters; at most 200 fit .*position 201"),
             "NUL": ("sea\x00rch", "NUL character at position 4"),
             "lone surrogate": ("se\ud800arch", "lone surrogate at position 3")}


@pytest.mark.parametrize(("value", "says"), POSITIONS.values(), ids=POSITIONS.keys())
def test_a_tool_name_is_refused_with_its_position_given_or_derived_never_cut(value: str, says: str) -> None:
    with pytest.raises(ValueError, match=f"the tool name .*{says}"):
        shadow.tool(name=value)

    def search(q: str) -> str:
        return q

    search.__name__ = value
    with pytest.raises(ValueError, match=f"the function's name .*{says}.*@shadow.tool\\(name="):
        shadow.tool(search)
