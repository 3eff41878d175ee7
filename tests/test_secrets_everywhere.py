"""No planted credential is stored, logged, exported, reported or served: every byte searched, on SQLite and
PostgreSQL (``SHADOW_TEST_POSTGRES_URL``), for the corpus of tests/_secrets_corpus.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests._secrets_corpus import CORPUS, ECHOED, KEY_NAMES, RULES

ROOT = Path(__file__).resolve().parents[1]
CHILD = ROOT / "tests" / "_secrets_child.py"
NEEDLES = sorted({s for _n, _p, _t, s in CORPUS} | {e["needle"] for e in RULES}
                 | {f"KeyVal-{k}-Zq81" for k in KEY_NAMES} | set(ECHOED))


def _env(extra: dict[str, str]) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")}
    return {**base, "PYTHONPATH": str(ROOT), "SHADOW_FLAGS": "*=cutover,shadow_result=shadow,login_shadow=shadow",
            "SHADOW_LOG_LEVEL": "DEBUG", "SHADOW_FINGERPRINT_KEY": "secrets-test", **extra}


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=_env(env), capture_output=True, text=True, timeout=900, check=False)


def _cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = _run([sys.executable, "-m", "shadow", *args], cwd, env)
    assert done.returncode in (0, 1), f"shadow {' '.join(args)}: {done.stdout[-1000:]}{done.stderr[-2000:]}"
    return done


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rows_text(url: str) -> str:
    """Every row of every table of the call log, as text."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            tables = [row[0] for row in conn.execute(text(
                "SELECT name FROM sqlite_master WHERE type = 'table'" if url.startswith("sqlite") else
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))]
            return json.dumps({t: [list(r) for r in conn.execute(text(f'SELECT * FROM "{t}"'))] for t in tables},
                              default=str)
    finally:
        engine.dispose()


def _leaks(places: dict[str, bytes]) -> list[tuple[str, str]]:
    found = []
    for place, blob in places.items():
        for needle in NEEDLES:
            if needle.encode() in blob or json.dumps(needle)[1:-1].encode() in blob:
                found.append((place, needle))
    return found


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shadow.db'}"
    else:
        yield str(request.getfixturevalue("pg_url"))


def test_the_corpus_covers_at_least_150_rules_and_400_values() -> None:
    assert len({e["rule"] for e in RULES}) >= 150
    assert len(NEEDLES) >= 400
    assert {e["placement"] for e in RULES} == {"bare", "assignment", "context"}


@pytest.mark.parametrize("entry", RULES, ids=lambda e: e["rule"])
def test_every_rule_value_is_redacted_as_a_whole_string_in_text_as_a_key_and_nested(entry: dict[str, str]) -> None:
    from shadow._redact import dumps, to_jsonable
    from shadow.calllog import _plain

    value, needle = entry["text"], entry["needle"]
    placed = {"whole": value, "text": f"upstream said: {value} (retry later)", value: 1,
              "nested": {"rows": [{"cell": value}], "keys": {value: value}}}
    assert needle not in dumps(to_jsonable(placed))
    assert not _plain.clean(value) and not _plain.clean({value: 1}) and not _plain.clean([{"v": value}])


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_no_planted_credential_reaches_any_byte_of_store_spool_warehouse_export_report_dashboard_or_payload(
        store_url: str, tmp_path: Path) -> None:
    env = {"SHADOW_DB_URL": store_url, "SHADOW_WAREHOUSE": str(tmp_path / "shadow.duckdb")}
    live = _run([sys.executable, str(CHILD)], tmp_path, env)
    assert live.returncode == 0, live.stderr[-3000:]
    spool_dir = tmp_path / "spooled"
    spool_dir.mkdir()
    spooled = _run([sys.executable, str(CHILD)], tmp_path, {
        "SHADOW_DB_URL": f"postgresql+psycopg://u@127.0.0.1:{_closed_port()}/x",
        "SHADOW_SPOOL": str(spool_dir / "calls.spool")})
    assert spooled.returncode == 0, spooled.stderr[-3000:]
    steps = [_cli("sync", cwd=tmp_path, env=env),
             _cli("export", "parquet", str(tmp_path / "pq"), cwd=tmp_path, env=env),
             _cli("report", "loop-rate", "--no-sync", "--wide", cwd=tmp_path, env=env),
             _cli("report", "loop-rate", "--no-sync", "--by", "code", "--format", "json", cwd=tmp_path, env=env),
             _cli("dashboard", "--out", str(tmp_path / "cutover.html"), "--no-sync", cwd=tmp_path, env=env),
             _cli("rules", "suggest", cwd=tmp_path, env=env)]
    import duckdb

    with duckdb.connect(str(tmp_path / "shadow.duckdb"), read_only=True) as con:
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        warehouse = json.dumps({t: con.execute(f'SELECT * FROM "{t}"').fetchall() for t in tables}, default=str)
        parquet = json.dumps(con.execute(f"SELECT * FROM read_parquet('{tmp_path / 'pq'}/**/*.parquet', union_by_name = true)"
                                         ).fetchall(), default=str)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in files) and any("spool" in p.name for p in files)
    assert (tmp_path / "cutover.html").stat().st_size > 10_000
    places = {
        "files (sqlite, spool, duckdb, parquet, dashboard)": b"".join(p.read_bytes() for p in files),
        "call log rows": _rows_text(store_url).encode(), "warehouse rows": warehouse.encode(),
        "parquet rows": parquet.encode(), "stderr": "".join(r.stderr for r in (live, spooled, *steps)).encode(),
        "report and rules suggest output": "".join(r.stdout for r in steps).encode(),
        "served payloads": (live.stdout + spooled.stdout).encode(),
    }
    assert len(json.loads(live.stdout)) > 2000  # the error payloads served in cutover
    assert _leaks(places) == []
    assert "No task has the id [REDACTED]" in live.stdout
    assert "connected with [REDACTED]" in live.stdout  # a success's data: echoed credential-keyed argument removed
