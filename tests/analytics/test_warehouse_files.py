"""``shadow sync`` refuses a DuckDB file it did not create, whatever the flags; a truncated warehouse is a clear
error and ``--rebuild`` recovers (the damaged file is moved aside, never deleted)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"},
            "PYTHONPATH": str(ROOT), "SHADOW_DB_URL": f"sqlite:///{tmp_path / 'shadow.db'}", "SHADOW_FLAGS": "*=shadow"}


def _calls(tmp_path: Path) -> None:
    code = textwrap.dedent('''
        import shadow
        @shadow.tool
        def search(q):
            return {"error": "Service unavailable"}
        for i in range(30):
            search(q=i % 3)
        assert shadow.flush(10)
    ''')
    subprocess.run([sys.executable, "-c", code], env=_env(tmp_path), check=True, timeout=120)


def _sync(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shadow", "sync", *args], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("flags", [[], ["--rebuild"]], ids=["sync", "sync --rebuild"])
def test_a_duckdb_file_shadow_did_not_create_is_refused_and_left_untouched(tmp_path: Path, flags: list[str]) -> None:
    _calls(tmp_path)
    user = tmp_path / "billing.duckdb"
    with duckdb.connect(str(user)) as con:
        con.execute("CREATE TABLE calls (call_id INTEGER, customer VARCHAR, minutes INTEGER)")
        con.execute("INSERT INTO calls VALUES (1, 'acme', 30)")
        con.execute("CREATE TABLE invoices (id INTEGER)")
    done = _sync(tmp_path, "--warehouse", str(user), *flags)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "shadow did not create" in done.stderr and "Traceback" not in done.stderr
    with duckdb.connect(str(user), read_only=True) as con:
        assert con.execute("SELECT * FROM calls").fetchall() == [(1, "acme", 30)]
        assert sorted(r[0] for r in con.execute("SHOW TABLES").fetchall()) == ["calls", "invoices"]


@pytest.mark.parametrize("made", [
    "CREATE VIEW monthly AS SELECT 42 AS total",
    "CREATE SCHEMA archive; CREATE TABLE archive.invoices (id INTEGER)",
], ids=["only a view", "a table in another schema"])
def test_a_duckdb_file_holding_only_views_or_other_schemas_is_refused_too(tmp_path: Path, made: str) -> None:
    _calls(tmp_path)
    user = tmp_path / "billing.duckdb"
    with duckdb.connect(str(user)) as con:
        con.execute(made)
        before = con.execute("SELECT database_name, schema_name, table_name FROM duckdb_tables() "
                             "UNION ALL SELECT database_name, schema_name, view_name FROM duckdb_views() "
                             "WHERE NOT internal ORDER BY ALL").fetchall()
    done = _sync(tmp_path, "--warehouse", str(user), "--rebuild")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "shadow did not create" in done.stderr and "Traceback" not in done.stderr
    with duckdb.connect(str(user), read_only=True) as con:
        assert con.execute("SELECT database_name, schema_name, table_name FROM duckdb_tables() "
                           "UNION ALL SELECT database_name, schema_name, view_name FROM duckdb_views() "
                           "WHERE NOT internal ORDER BY ALL").fetchall() == before


@pytest.mark.slow
def test_a_truncated_warehouse_is_a_clear_error_and_rebuild_recovers(tmp_path: Path) -> None:
    _calls(tmp_path)
    assert _sync(tmp_path).returncode == 0
    warehouse = tmp_path / "shadow.duckdb"
    with warehouse.open("r+b") as f:
        f.truncate(warehouse.stat().st_size // 2)
    broken = _sync(tmp_path)
    assert broken.returncode == 2 and "Traceback" not in broken.stderr
    assert "truncated or damaged" in broken.stderr and "--rebuild" in broken.stderr
    rebuilt = _sync(tmp_path, "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "30 new calls" in rebuilt.stdout
    assert len(list(tmp_path.glob("shadow.duckdb.damaged-*"))) == 1
