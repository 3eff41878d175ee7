"""A gate judging as logged, across versions of the rules, says how to judge today's rules alone."""

from __future__ import annotations

import re
import time
from pathlib import Path

import shadow
from shadow.analytics._ready import readiness
from shadow.analytics._thresholds import Thresholds
from shadow.calllog._store import SqlStore
from shadow.testing import InMemoryFlags, recording

LIMITS = Thresholds(min_calls=10, min_errors=10)


def _log(url: str, rules: shadow.Rules, n: int) -> None:
    flags = InMemoryFlags()
    flags.set("book", "shadow")

    @shadow.tool(name="book", rules=rules, flags=flags)
    def book(seat: int) -> dict[str, str]:
        return {"error": f"seat {seat} is held for group travel"}

    with recording(SqlStore(url)):
        for seat in range(n):
            book(seat)
        assert shadow.flush(30)


def test_as_logged_across_rules_versions_the_advice_names_rules_and_the_newest_versions_since(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/log.db"
    _log(url, shadow.Rules.default(), 30)  # unplaced: rejected, unmapped
    time.sleep(1.1)  # the newest version starts in a later second
    fixed = shadow.Rules.default().on_result(r"is held for", "failed_precondition", name="held")
    _log(url, fixed, 20)
    judged = readiness(url, "book", LIMITS)
    assert not judged.ready and judged.rules == "as logged"
    [check] = [c for c in judged.checks if c.name == "unmapped_share"]
    assert "2 versions of the rules" in check.advice and "--rules MODULE" in check.advice
    assert "(they were served rejected (30))" in check.advice  # what this tool's unmapped errors were served
    since = re.search(r"shadow ready TOOL --since (\S+)`", check.advice)
    assert since is not None
    from shadow.cli._options import time_option

    newest = readiness(url, "book", LIMITS, since=time_option(since.group(1), "--since"))
    assert newest.ready and newest.errors == 20, newest.explain()


def test_one_version_of_the_rules_gets_no_such_advice(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/log.db"
    _log(url, shadow.Rules.default(), 30)
    [check] = [c for c in readiness(url, "book", LIMITS).checks if c.name == "unmapped_share"]
    assert not check.passed and "versions of the rules" not in check.advice
