"""The Alembic migrations: head matches shadow.tables, ensure is cheap and safe concurrently, and the db commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text
from typer.testing import CliRunner

from shadow import _config as config
from shadow.calllog import _migrate as migrate
from shadow.calllog._tables import metadata
from shadow.cli import app

REPO = Path(__file__).resolve().parents[2]


def diffs(url: str) -> list[object]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return list(compare_metadata(MigrationContext.configure(conn), metadata))
    finally:
        engine.dispose()


def test_upgrade_head_on_an_empty_database_matches_the_metadata(db_url: str) -> None:
    migrate.upgrade(db_url)
    assert diffs(db_url) == []
    engine = create_engine(db_url)
    try:
        names = set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    assert names == {"calls", "marks", "flags", "flag_audit", "writer_stats", "alembic_version"}


def test_a_database_without_the_schema_differs_from_the_metadata(sqlite_url: str) -> None:
    engine = create_engine(sqlite_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE calls (id VARCHAR(36) PRIMARY KEY)"))
    engine.dispose()
    assert diffs(sqlite_url) != []  # the comparison can fail, so the test above means something


def test_current_is_none_before_and_head_after_an_upgrade(db_url: str) -> None:
    assert migrate.current(db_url) is None
    migrate.upgrade(db_url)
    assert migrate.current(db_url) == migrate.head()


def test_current_of_a_missing_sqlite_file_does_not_create_it(tmp_path: Path) -> None:
    assert migrate.current(f"sqlite:///{tmp_path}/absent.db") is None
    assert not (tmp_path / "absent.db").exists()


def test_downgrade_to_base_and_upgrade_again(db_url: str) -> None:
    migrate.upgrade(db_url)
    command.downgrade(migrate.alembic_config(db_url), "base")
    assert migrate.current(db_url) is None
    migrate.upgrade(db_url)
    assert diffs(db_url) == []


def test_ensure_upgrades_once_and_then_answers_from_its_cache(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    migrate.forget()
    migrate.ensure(sqlite_url)
    assert migrate.current(sqlite_url) == migrate.head()

    def no_database(url: str) -> str | None:
        raise AssertionError("ensure asked the database again")

    monkeypatch.setattr(migrate, "current", no_database)
    migrate.ensure(sqlite_url)
    migrate.forget(sqlite_url)
    with pytest.raises(AssertionError, match="asked the database again"):
        migrate.ensure(sqlite_url)


_ENSURE = """
import sys
from shadow.calllog import _migrate as migrate
migrate.ensure(sys.argv[1])
print(migrate.current(sys.argv[1]))
"""


def test_ensure_from_three_processes_at_once_upgrades_the_database_once(db_url: str) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", _ENSURE, db_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
        for _ in range(3)
    ]
    results = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == migrate.head()
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            versions = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    finally:
        engine.dispose()
    assert versions == [migrate.head()]
    assert diffs(db_url) == []


def test_the_migrations_are_package_data_of_the_calllog_subpackage() -> None:
    assert migrate.migrations_dir() == REPO / "shadow" / "calllog" / "migrations"
    assert (migrate.migrations_dir() / "env.py").is_file()


def test_the_initial_revision_imports_nothing_from_shadow() -> None:
    # A revision must keep describing the schema of its time, whatever shadow.tables becomes later.
    for path in (REPO / "migrations" / "versions").glob("*.py"):
        source = path.read_text()
        assert "import shadow" not in source and "from shadow" not in source, path.name


runner = CliRunner()


def test_db_upgrade_then_current_report_the_head(db_url: str) -> None:
    first = runner.invoke(app, ["db", "upgrade", "--url", db_url, "--format", "json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.output) == {"url": json.loads(first.output)["url"], "from": None, "to": migrate.head()}
    again = runner.invoke(app, ["db", "upgrade", "--url", db_url])
    assert again.exit_code == 0
    assert "already at" in again.output
    shown = runner.invoke(app, ["db", "current", "--url", db_url, "--format", "json"])
    assert shown.exit_code == 0
    assert json.loads(shown.output)["current"] == migrate.head()
    assert json.loads(shown.output)["up_to_date"] is True


def test_db_upgrade_defaults_to_the_configured_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHADOW_DB_URL", f"sqlite:///{tmp_path}/env.db")
    config.reset()
    result = runner.invoke(app, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert migrate.current(f"sqlite:///{tmp_path}/env.db") == migrate.head()


def test_db_current_of_an_empty_database_says_how_to_create_it(sqlite_url: str) -> None:
    result = runner.invoke(app, ["db", "current", "--url", sqlite_url])
    assert result.exit_code == 0
    assert "shadow db upgrade" in result.output


def test_db_upgrade_with_a_bad_url_is_a_usage_error() -> None:
    result = runner.invoke(app, ["db", "upgrade", "--url", "not a url"])
    assert result.exit_code == 2
    assert "for example sqlite:///shadow.db" in result.output


def test_db_upgrade_with_an_unknown_revision_is_a_usage_error(sqlite_url: str) -> None:
    result = runner.invoke(app, ["db", "upgrade", "--url", sqlite_url, "--revision", "nope"])
    assert result.exit_code == 2
    assert "--revision head" in result.output


def test_db_upgrade_of_an_unreachable_server_exits_unavailable_without_the_password() -> None:
    result = runner.invoke(
        app, ["db", "upgrade", "--url", "postgresql+psycopg://postgres:hunter2@127.0.0.1:1/x?connect_timeout=2"]
    )
    assert result.exit_code == 3
    assert "could not be used" in result.output and "127.0.0.1" in result.output
    assert "hunter2" not in result.output


def test_the_first_shadowed_call_migrates_without_alembic_info_lines_in_a_host_logging_at_info(
    tmp_path: Path,
) -> None:
    script = """
import logging, sqlite3
logging.basicConfig(level=logging.INFO, format="HOST %(levelname)s [%(name)s] %(message)s")  # as MCPServer does
import shadow

@shadow.tool("create_task", rules=shadow.Rules.default())
def create_task(title: str) -> dict:
    return {"error": "Bad request"}

with shadow.session("task-1"):
    create_task("x")
shadow.flush()
print(sqlite3.connect("shadow.db").execute("SELECT count(*) FROM calls").fetchone()[0])
logging.getLogger("alembic.runtime.migration").info("the host's own alembic info")
logging.getLogger("alembic.runtime.migration").warning("the host's own alembic warning")
"""
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SHADOW_FLAGS": "create_task=shadow",
           "SHADOW_FINGERPRINT_KEY": "k" * 32}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"  # the migration ran, and the call was logged
    alembic_lines = [line for line in done.stderr.splitlines() if "[alembic" in line]
    assert alembic_lines == ["HOST INFO [alembic.runtime.migration] the host's own alembic info",
                             "HOST WARNING [alembic.runtime.migration] the host's own alembic warning"], done.stderr
