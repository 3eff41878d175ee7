"""The gate judges today's rules: `--rules` translates the logged errors again, in `shadow ready` and `flags set`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shadow.analytics._ready import readiness
from shadow.analytics._thresholds import Thresholds

LIMITS = Thresholds(min_calls=10, min_errors=5)

LOG = """
import shadow

class OrderRejected(Exception):
    pass

@shadow.tool
def book(i: int):
    if i % 5 == 0:
        return f"Error: train TR{4400 + i} runs on Sundays"
    if i % 5 == 1:
        raise KeyError(f"order {i}")
    if i % 5 == 2:
        raise OrderRejected(f"coupon SPRING{i} stacks with no other offer")
    return {"seat": i}

for i in range(60):
    try:
        book(i)
    except (KeyError, OrderRejected):
        pass
shadow.flush()
"""

FIX = """
import shadow

class OrderRejected(Exception):  # the tool layer's own type, by name as the log stores it
    pass

RULES = (shadow.Rules.default()
         .on_result(r"runs on Sundays", "failed_precondition")
         .on(KeyError, "not_found", "No such order. List the orders first.")
         .on(OrderRejected, "failed_precondition", "The coupon does not apply. Offer the order without it."))
"""


def _env(url: str) -> dict[str, str]:
    return {**os.environ, "SHADOW_DB_URL": url, "SHADOW_FLAGS": "*=shadow", "SHADOW_FINGERPRINT_KEY": "k" * 32}


@pytest.fixture
def logged(tmp_path: Path) -> tuple[str, Path]:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    (tmp_path / "app.py").write_text(textwrap.dedent(LOG))
    subprocess.run([sys.executable, "app.py"], cwd=tmp_path, env=_env(url), check=True, timeout=120,
                   capture_output=True)
    (tmp_path / "fix.py").write_text(textwrap.dedent(FIX))
    return url, tmp_path


def _cli(args: list[str], url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shadow.cli", *args], cwd=cwd, env=_env(url), text=True, check=False,
                          capture_output=True, timeout=120)


def test_a_rules_fix_is_judged_at_once_on_the_errors_already_logged(logged: tuple[str, Path]) -> None:
    url, _ = logged
    as_logged = readiness(url, "book", LIMITS)
    assert (as_logged.errors, as_logged.unmapped, as_logged.ready, as_logged.rules) == (36, 36, False, "as logged")
    from importlib import util

    spec = util.spec_from_file_location("fix", logged[1] / "fix.py")
    assert spec is not None and spec.loader is not None
    module = util.module_from_spec(spec)
    spec.loader.exec_module(module)
    again = readiness(url, "book", LIMITS, rules=module.RULES, rules_name="fix.py")
    assert (again.errors, again.unmapped, again.ready, again.rules) == (36, 0, True, "fix.py")
    assert again.codes_seen == {"not_found": 12, "failed_precondition": 24}


def test_shadow_ready_and_flags_set_cutover_take_rules_and_say_which_were_used(logged: tuple[str, Path]) -> None:
    url, cwd = logged
    limits = ["--min-calls", "10", "--min-errors", "5"]
    before = _cli(["ready", "book", *limits], url, cwd)
    assert before.returncode == 1
    assert "classified by the rules in force when each call was logged" in before.stdout
    after = _cli(["ready", "book", *limits, "--rules", "fix.py", "--format", "json"], url, cwd)
    assert after.returncode == 0, after.stdout + after.stderr
    data = json.loads(after.stdout)
    assert (data["ready"], data["unmapped"], data["rules"]) == (True, 0, "--rules fix.py")
    refused = _cli(["flags", "set", "book", "cutover"], url, cwd)
    assert refused.returncode == 1 and "--rules MODULE" in refused.stderr
    # the default gate asks for 200 calls: this log has 60, so even today's rules leave it not ready, and it says so
    judged = _cli(["flags", "set", "book", "cutover", "--rules", "fix.py"], url, cwd)
    assert judged.returncode == 1 and "translated again with --rules fix.py" in judged.stderr
    assert "unmapped" not in judged.stderr.split("for details")[0]


def test_a_bad_rules_module_is_a_clear_error_not_a_traceback(logged: tuple[str, Path]) -> None:
    url, cwd = logged
    (cwd / "empty.py").write_text("X = 1\n")
    found = _cli(["ready", "book", "--rules", "empty.py"], url, cwd)
    assert found.returncode == 2 and "defines no RULES" in found.stderr and "Traceback" not in found.stderr
