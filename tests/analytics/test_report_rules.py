"""The report's and the dashboard's recommendations judge today's rules: `--rules` (or SHADOW_RULES) translates the
logged errors again, through the same code as `shadow ready --rules`, and the output says which rules were used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_ready_rules import FIX, LOG

ROOT = Path(__file__).resolve().parents[2]


def _env(url: str, **extra: str) -> dict[str, str]:
    env = {**os.environ, "SHADOW_DB_URL": url, "SHADOW_FLAGS": "*=shadow", "SHADOW_FINGERPRINT_KEY": "k" * 32,
           "PYTHONPATH": str(ROOT), **extra}
    if "SHADOW_RULES" not in extra:
        env.pop("SHADOW_RULES", None)
    return env


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    cwd = tmp_path_factory.mktemp("report_rules")
    url = f"sqlite:///{cwd / 'log.db'}"
    (cwd / "app.py").write_text(textwrap.dedent(LOG))
    subprocess.run([sys.executable, "app.py"], cwd=cwd, env=_env(url), check=True, timeout=120, capture_output=True)
    (cwd / "fix.py").write_text(textwrap.dedent(FIX))
    return url, cwd


def _cli(args: list[str], url: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shadow.cli", *args], cwd=cwd, env=_env(url, **extra), text=True,
                          check=False, capture_output=True, timeout=300)


def _book(stdout: str) -> dict[str, object]:
    data = json.loads(stdout)
    [book] = [t for t in data["by_tool"] if t["tool"] == "book"]
    return {"rules": data["rules"], **book}


def test_the_report_recommends_on_the_errors_translated_again_with_rules(logged: tuple[str, Path]) -> None:
    url, cwd = logged
    before = _cli(["report", "loop-rate", "--format", "json"], url, cwd)
    assert before.returncode == 0, before.stderr
    book = _book(before.stdout)
    assert (book["rules"], book["errors"], book["unmapped_errors"]) == ("as logged", 36, 36)
    assert book["recommendation"]["action"] == "fix_rules"  # type: ignore[index]
    assert book["evidence"]["unmapped_shapes"] > 0  # type: ignore[index]
    after = _cli(["report", "loop-rate", "--format", "json", "--no-sync", "--rules", "fix.py"], url, cwd)
    assert after.returncode == 0, after.stderr
    book = _book(after.stdout)
    assert (book["rules"], book["errors"], book["unmapped_errors"], book["no_longer_errors"]) == (
        "--rules fix.py", 36, 0, 0)
    assert book["recommendation"]["action"] == "raise"  # type: ignore[index]
    # the shapes "add rules for these" lists are those still unmapped with the rules given, none here
    assert (book["evidence"]["unmapped"], book["evidence"]["unmapped_shapes"]) == ([], 0)  # type: ignore[index]
    text = _cli(["report", "loop-rate", "--no-sync", "--rules", "fix.py"], url, cwd)
    assert text.returncode == 0, text.stderr
    assert "Every logged error is translated again with --rules fix.py." in " ".join(text.stdout.split())
    plain = _cli(["report", "loop-rate", "--no-sync"], url, cwd)
    assert "classified by the rules in force when each call was logged" in " ".join(plain.stdout.split())


def test_the_configured_rules_are_the_default_of_report_dashboard_and_ready(logged: tuple[str, Path]) -> None:
    url, cwd = logged
    found = _cli(["report", "loop-rate", "--format", "json"], url, cwd, SHADOW_RULES="fix.py")
    assert found.returncode == 0, found.stderr
    book = _book(found.stdout)
    assert (book["rules"], book["unmapped_errors"]) == ("SHADOW_RULES=fix.py", 0)
    ready = _cli(["ready", "book", "--min-calls", "10", "--min-errors", "5", "--format", "json"], url, cwd,
                 SHADOW_RULES="fix.py")
    assert ready.returncode == 0, ready.stdout + ready.stderr
    assert (json.loads(ready.stdout)["rules"], json.loads(ready.stdout)["unmapped"]) == ("SHADOW_RULES=fix.py", 0)
    bad = _cli(["report", "loop-rate", "--no-sync"], url, cwd, SHADOW_RULES="nowhere_at_all.py")
    assert bad.returncode == 2 and bad.stderr.startswith("shadow: SHADOW_RULES: no file nowhere_at_all.py") and "Traceback" not in bad.stderr


def test_the_dashboard_recommends_on_the_errors_translated_again_and_says_so(logged: tuple[str, Path]) -> None:
    url, cwd = logged
    page = cwd / "cutover.html"
    as_logged = _cli(["dashboard", "--out", str(page)], url, cwd)
    assert as_logged.returncode == 0, as_logged.stderr
    html = page.read_text()
    assert "classified by the rules in force when each call was logged" in html
    assert 'class="action fix_rules"' in html
    again = _cli(["dashboard", "--out", str(page), "--no-sync", "--rules", "fix.py"], url, cwd)
    assert again.returncode == 0, again.stderr
    html = page.read_text()
    assert "Every logged error is translated again with --rules fix.py." in html
    assert 'class="action raise"' in html and 'class="action fix_rules"' not in html


FIXED_APP = """
import shadow
from fix import RULES

class OrderRejected(Exception):
    pass

@shadow.tool(rules=RULES)
def book(i: int):
    if i % 5 == 0:
        return f"Error: train TR{4400 + i} runs on Sundays"
    if i % 5 == 1:
        raise KeyError(f"order {i}")
    return {"seat": i}

for i in range(40):
    try:
        book(i)
    except KeyError:
        pass
shadow.flush()
print(RULES.fingerprint, shadow.Rules.default().fingerprint)
"""


def test_the_report_splits_by_the_rules_that_translated_each_call(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    (tmp_path / "app.py").write_text(textwrap.dedent(LOG))
    (tmp_path / "fix.py").write_text(textwrap.dedent(FIX))
    (tmp_path / "fixed_app.py").write_text(textwrap.dedent(FIXED_APP))
    subprocess.run([sys.executable, "app.py"], cwd=tmp_path, env=_env(url), check=True, timeout=120,
                   capture_output=True)
    done = subprocess.run([sys.executable, "fixed_app.py"], cwd=tmp_path, env=_env(url), check=True, timeout=120,
                          capture_output=True, text=True)
    fixed, default = done.stdout.split()
    found = _cli(["report", "loop-rate", "--format", "json"], url, tmp_path)
    assert found.returncode == 0, found.stderr
    rows = {r["rules_fingerprint"]: r for r in json.loads(found.stdout)["by_rules"] if r["tool"] == "book"}
    assert set(rows) == {default, fixed}
    assert (rows[default]["calls"], rows[default]["errors"], rows[default]["unmapped_share"]) == (60, 36, 1.0)
    assert (rows[fixed]["calls"], rows[fixed]["errors"], rows[fixed]["unmapped_share"]) == (40, 16, 0.0)
    assert rows[default]["loop_rate"] == 0.0
    text = _cli(["report", "loop-rate", "--no-sync"], url, tmp_path)
    assert "By rules version" in text.stdout
    [line] = [ln for ln in text.stdout.splitlines() if fixed in ln]
    assert line.split()[:5] == ["book", fixed, "40", "16", "0.0%"]


def test_the_shapes_listed_are_those_the_rules_given_leave_unmapped_even_if_logged_as_mapped(tmp_path: Path) -> None:
    """Logged under a tool layer's own rules, judged with the built-in ones alone: the list was the logged one."""
    url = f"sqlite:///{tmp_path / 'log.db'}"
    (tmp_path / "fix.py").write_text(textwrap.dedent(FIX))
    app = textwrap.dedent(LOG).replace("import shadow\n", "import shadow\nimport fix\n", 1).replace(
        "@shadow.tool\n", "@shadow.tool(rules=fix.RULES)\n")
    (tmp_path / "app.py").write_text(app)
    subprocess.run([sys.executable, "app.py"], cwd=tmp_path, env=_env(url), check=True, timeout=120,
                   capture_output=True)
    (tmp_path / "builtin.py").write_text("import shadow\n\nRULES = shadow.Rules.default()\n")
    logged = _book(_cli(["report", "loop-rate", "--format", "json"], url, tmp_path).stdout)
    assert logged["unmapped_errors"] == 12  # fix.py's own OrderRejected is not app.py's: those stay unmapped
    assert sum(s["errors"] for s in logged["evidence"]["unmapped"]) == 12  # type: ignore[index]
    judged = _cli(["report", "loop-rate", "--format", "json", "--no-sync", "--rules", "builtin.py"], url, tmp_path)
    assert judged.returncode == 0, judged.stderr
    book = _book(judged.stdout)
    assert book["unmapped_errors"] == 36
    assert book["evidence"]["unmapped_shapes"] > 0  # type: ignore[index]
    assert sum(s["errors"] for s in book["evidence"]["unmapped"]) == 36  # type: ignore[index]
