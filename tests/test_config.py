"""Configuration errors never break a tool or the host: reported once, the default used; ``shadow doctor``."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shadow import _config as config
from shadow.flags._db import DbFlags

ROOT = Path(__file__).resolve().parents[1]

_CALLS = textwrap.dedent('''
    import json, shadow
    from shadow.testing import InMemoryFlags

    results = []
    for mode in ("legacy", "shadow", "cutover"):
        @shadow.tool(name="search_" + mode, flags=InMemoryFlags({"search_" + mode: mode}))
        def search(q: str) -> str:
            raise TimeoutError("slow")
        for _ in range(5):
            try:
                results.append(search(q="x"))
            except TimeoutError:
                results.append("legacy raised")
    @shadow.tool
    def plain(q: str) -> str:
        return "plain"
    results += [plain(q="x") for _ in range(5)]
    shadow.flush(10)
    print(json.dumps(results))
''')


def _child(env: dict[str, str], cwd: Path, code: str = _CALLS) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120,
                          check=False, env={**base, "PYTHONPATH": str(ROOT), **env})


@pytest.mark.parametrize(("variable", "value", "example"), [
    ("SHADOW_FLAG_TTL", "5s", "SHADOW_FLAG_TTL=5"),
    ("SHADOW_FLAG_TTL", "nan", "SHADOW_FLAG_TTL=5"),
    ("SHADOW_FLAG_TTL", "-1", "SHADOW_FLAG_TTL=5"),
    ("SHADOW_LOG_LEVEL", "LOUD", "SHADOW_LOG_LEVEL=INFO"),
    ("SHADOW_FLAGS", "plain=bogus", "SHADOW_FLAGS='search=shadow"),
    ("SHADOW_DB_URL", "not a url", "SHADOW_DB_URL=sqlite:///shadow.db"),
    ("SHADOW_DB_URL", "mysql://u@localhost/db", "supports SQLite and PostgreSQL, not 'mysql'"),
    ("SHADOW_STRICT", "maybe", "SHADOW_STRICT=1"),
])
def test_an_invalid_setting_is_reported_once_and_every_tool_keeps_working(
    tmp_path: Path, variable: str, value: str, example: str
) -> None:
    env = {"SHADOW_DB_URL": f"sqlite:///{tmp_path / 'shadow.db'}", variable: value}
    if variable == "SHADOW_LOG_LEVEL":
        env["SHADOW_LOG_LEVEL"] = value
        code = "import logging; logging.basicConfig(level=logging.WARNING)\n" + _CALLS.replace(
            "import json, shadow", "import json, shadow, shadow._config as c; c.level_from_env()")
    else:
        code = _CALLS
    done = _child(env, tmp_path, code)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert results[:5] == ["legacy raised"] * 5 and results[5:10] == ["legacy raised"] * 5
    assert all(r["error"]["code"] == "upstream_timeout" for r in results[10:15])
    assert results[15:] == ["plain"] * 5
    warnings = [line for line in done.stderr.splitlines() if "setting_invalid" in line]
    assert len(warnings) == 1, done.stderr
    assert variable in warnings[0] and value in warnings[0] and example in warnings[0]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "5s"])
def test_a_ttl_that_would_never_refresh_is_replaced_by_the_default(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("SHADOW_FLAG_TTL", value)
    assert config.settings().flag_ttl == 5.0
    assert DbFlags("sqlite://", ttl=float(value) if value != "5s" else math.nan).ttl == 5.0


def test_the_cli_runs_with_an_invalid_log_level(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "shadow", "schema"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "SHADOW_LOG_LEVEL": "LOUD"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)
    assert done.stderr.count("setting_invalid") == 1


def _doctor(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"}
    return subprocess.run([sys.executable, "-m", "shadow", "doctor", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False, env={**base, "PYTHONPATH": str(ROOT), **env})


def test_doctor_passes_a_valid_configuration(tmp_path: Path) -> None:
    done = _doctor({"SHADOW_DB_URL": f"sqlite:///{tmp_path / 'shadow.db'}", "SHADOW_FLAG_TTL": "2",
                    "SHADOW_FLAGS": "search=shadow"}, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PROBLEM" not in done.stdout


def test_doctor_names_every_invalid_setting_and_exits_non_zero(tmp_path: Path) -> None:
    done = _doctor({"SHADOW_FLAG_TTL": "5s", "SHADOW_LOG_LEVEL": "LOUD", "SHADOW_FLAGS": "search=bogus",
                    "SHADOW_DB_URL": "not a url"}, tmp_path, "--offline", "--json")
    assert done.returncode == 1
    checks = [json.loads(line) for line in done.stdout.splitlines()]
    details = " ".join(c["detail"] for c in checks if not c["ok"])
    for needle in ("SHADOW_FLAG_TTL='5s'", "SHADOW_LOG_LEVEL='LOUD'", "'search=bogus'", "SHADOW_DB_URL='not a url'"):
        assert needle in details


def test_doctor_reports_an_unreachable_database_with_exit_3(tmp_path: Path) -> None:
    done = _doctor({"SHADOW_DB_URL": "postgresql+psycopg://u@127.0.0.1:1/x"}, tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "cannot use" in done.stdout


@pytest.mark.parametrize(("setting", "value"), [
    ("queue_size", 0), ("queue_size", -1), ("batch_size", 0), ("flush_interval", -1), ("flag_ttl", "5"),
    ("store_timeout", 0), ("max_args_bytes", -5), ("queue_size", True), ("flush_interval", math.nan),
])
def test_configure_refuses_a_number_every_call_would_fail_on(setting: str, value: object) -> None:
    """An outside check: these were accepted, then every call logged a traceback and nothing was recorded."""
    before = config.settings()
    with pytest.raises(ValueError, match=f"{setting}=.*for example {setting}="):
        config.configure(**{setting: value})  # type: ignore[misc]
    assert config.settings() is before
