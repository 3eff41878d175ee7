"""Flags at start-up: the start wait and what passes it, the last-known file (place, 0600, staleness), forks."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from shadow.calllog import _db as db
from shadow.flags import _last_known as last_known
from shadow.flags._db import DbFlags, FlagState, Mode
from tests._sql import rows as _rows

REPO = Path(__file__).resolve().parents[2]

THREE = textwrap.dedent(
    """
    import json, shadow

    @shadow.tool
    def create_task(title: str) -> dict:
        return {"id": 1, "title": title}

    print(json.dumps([str(create_task(f"t{i}")) for i in range(3)]))
    """
)


def _child(url: str, tmp: Path, code: str = THREE, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False,
                          env={**base, "PYTHONPATH": str(REPO), "SHADOW_DB_URL": url, "XDG_CACHE_HOME": str(tmp),
                               "SHADOW_SPOOL": str(tmp / "spool"), **env})
    assert done.returncode == 0, done.stderr
    return done


def _structured(done: subprocess.CompletedProcess[str]) -> int:
    return sum(1 for item in json.loads(done.stdout.splitlines()[-1]) if item.startswith('{"ok":true'))


@pytest.mark.postgres
def test_past_the_start_wait_calls_are_served_legacy_with_one_warning_and_their_records_say_late(
        pg_url: str, tmp_path: Path) -> None:
    DbFlags(pg_url, last_known="off").set("create_task", "cutover", 100)
    db.dispose_all()
    engine = create_engine(pg_url)
    conn = engine.connect()
    conn.execute(text("LOCK TABLE flags IN ACCESS EXCLUSIVE MODE"))  # the child's flag read blocks until released
    timer = threading.Timer(2.0, conn.rollback)
    timer.start()
    try:
        t0 = time.monotonic()
        done = _child(pg_url, tmp_path, SHADOW_FLAGS_LAST_KNOWN="off", SHADOW_FLAG_START_WAIT="0.3")
    finally:
        timer.join()
        conn.close()
        engine.dispose()
    assert _structured(done) == 0  # the bound passed without flags: legacy
    assert done.stderr.count("flags_start_wait_passed") == 1
    assert time.monotonic() - t0 < 30
    rows = _rows(pg_url, "SELECT mode, variant, flag_source FROM calls")
    assert rows == [("cutover", "legacy", "late")] * 3  # resolved by the writer once the flags were read


def _down(url: str) -> None:
    """Make the flag database unreadable: a SQLite file that is no database, a dropped PostgreSQL database."""
    db.dispose_all()
    if url.startswith("sqlite"):
        path = Path(url.removeprefix("sqlite:///"))
        for extra in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            extra.unlink(missing_ok=True)
        path.write_bytes(b"this is not a database" * 100)
        return
    name = url.rsplit("/", 1)[1]
    admin = create_engine(os.environ["SHADOW_TEST_POSTGRES_URL"], isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    admin.dispose()


def test_a_flag_database_down_at_start_serves_the_last_known_flags(db_url: str, tmp_path: Path) -> None:
    DbFlags(db_url, last_known="off").set("create_task", "cutover", 100)
    db.dispose_all()
    assert _structured(_child(db_url, tmp_path)) == 3  # this run reads the database and writes the last-known file
    _down(db_url)
    for ttl in ("5", "0"):  # a file confirmed within the TTL is served at once; an older one once the read failed
        done = _child(db_url, tmp_path, SHADOW_FLAG_START_WAIT="1", SHADOW_FLAG_TTL=ttl)
        assert _structured(done) == 3
        assert "flags_unreadable" in done.stderr and "the last flags read" in done.stderr
    # Without the file (or with one too old to trust) the same process serves legacy.
    assert _structured(_child(db_url, tmp_path, SHADOW_FLAGS_LAST_KNOWN_MAX_AGE="0", SHADOW_FLAG_START_WAIT="1")) == 0
    # SHADOW_FLAGS pins the tool: served as it says, and the warning says that the pinned tools are not legacy
    pinned = _child(db_url, tmp_path, SHADOW_FLAGS_LAST_KNOWN_MAX_AGE="0", SHADOW_FLAG_START_WAIT="1",
                    SHADOW_FLAGS="*=cutover")
    assert _structured(pinned) == 3
    assert "to the tools SHADOW_FLAGS does not name" in pinned.stderr


def test_the_last_known_file_sits_beside_a_sqlite_call_log_private_and_written_whole(sqlite_url: str) -> None:
    admin = DbFlags(sqlite_url, last_known="off")
    admin.set("search", "cutover", 25)
    admin.kill()
    reader = DbFlags(sqlite_url)
    assert reader.wait(10)
    path = Path(sqlite_url.removeprefix("sqlite:///")).with_name("shadow.flags.json")
    assert last_known.path_for(reader.url, None) == path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".")] == []  # no temporary file left
    data = json.loads(path.read_text())
    assert data["flags"] == {"search": ["cutover", 25]} and data["killed"] is True
    assert "sqlite" not in path.read_text()  # a hash of the URL, never the URL
    fresh = DbFlags(sqlite_url)  # starts on the file, before any read
    assert not fresh.pending("search") and fresh.origin("search") == "last_known"
    assert fresh._states == {"search": FlagState(Mode.CUTOVER, 25)} and fresh._killed


def test_a_postgres_flag_database_keeps_its_last_known_file_in_the_user_cache(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = last_known.path_for("postgresql+psycopg://u:secret@db:5432/app", None)
    assert path is not None and path.parent == tmp_path / "shadow" and "secret" not in path.name
    assert last_known.path_for("postgresql+psycopg://u@db/app", "off") is None
    assert last_known.path_for("sqlite://", None) is None


def test_a_last_known_file_others_may_write_or_of_another_database_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "flags.json"
    last_known.write(path, "key-a", {"t": FlagState(Mode.SHADOW)}, False)
    assert last_known.read(path, "key-a", 60)[0] is not None
    assert last_known.read(path, "key-b", 60) == (None, "another flag database")
    path.chmod(0o666)
    assert last_known.read(path, "key-a", 60) == (None, "writable by others")
    path.chmod(0o600)
    path.write_text("{not json")
    assert last_known.read(path, "key-a", 60)[0] is None


FORK = textwrap.dedent(
    """
    import json, os, sys, shadow
    from shadow.flags import _db as flagmod
    from shadow.flags._db import DbFlags

    @shadow.tool
    def create_task(title: str) -> dict:
        return {"id": 1, "title": title}

    assert flagmod.wait(10)
    DbFlags(os.environ["SHADOW_DB_URL"], last_known="off").set("create_task", "shadow")  # after the parent's read
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, str(create_task("child")).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    print(json.dumps([os.read(read, 65536).decode()]))
    """
)


@pytest.mark.parametrize(("after_fork", "structured"), [("inherit", 1), ("reload", 0)])
def test_a_forked_child_inherits_its_parents_flags_or_reloads_them(
        sqlite_url: str, tmp_path: Path, after_fork: str, structured: int) -> None:
    DbFlags(sqlite_url, last_known="off").set("create_task", "cutover", 100)
    db.dispose_all()
    done = _child(sqlite_url, tmp_path, FORK, SHADOW_FLAGS_AFTER_FORK=after_fork, SHADOW_FLAG_TTL="3600",
                  SHADOW_FLAGS_LAST_KNOWN="off")
    assert _structured(done) == structured  # inherit: the parent's cutover; reload: its own read (shadow)


def test_a_flag_change_made_elsewhere_reaches_the_next_short_process_despite_the_last_known_file(
        db_url: str, tmp_path: Path) -> None:
    """The file written before a kill (or an unkill) made from another machine, which leaves this machine's file
    as it was: a process started once the file is older than the flag TTL follows the database, not the file."""
    elsewhere = DbFlags(db_url, last_known="off")  # an admin on another machine: this machine's file is untouched
    elsewhere.set("create_task", "cutover", 100)
    db.dispose_all()
    ttl = {"SHADOW_FLAG_TTL": "0.5"}
    assert _structured(_child(db_url, tmp_path, **ttl)) == 3  # reads the database, writes the last-known file
    elsewhere.kill()
    db.dispose_all()
    time.sleep(0.6)
    assert _structured(_child(db_url, tmp_path, **ttl)) == 0  # the kill applies from the first call
    elsewhere.unkill()
    db.dispose_all()
    time.sleep(0.6)
    assert [_structured(_child(db_url, tmp_path, **ttl)) for _run in range(2)] == [3, 3]  # and so does the unkill


@pytest.mark.postgres
def test_a_stalled_flag_database_serves_a_last_known_file_too_old_to_start_on_once_the_start_wait_passed(
        pg_url: str, tmp_path: Path) -> None:
    DbFlags(pg_url, last_known="off").set("create_task", "cutover", 100)
    db.dispose_all()
    assert _structured(_child(pg_url, tmp_path)) == 3  # writes the last-known file
    engine = create_engine(pg_url)
    conn = engine.connect()
    conn.execute(text("LOCK TABLE flags IN ACCESS EXCLUSIVE MODE"))  # the child's flag read blocks until released
    timer = threading.Timer(3.0, conn.rollback)
    timer.start()
    try:
        t0 = time.monotonic()
        done = _child(pg_url, tmp_path, SHADOW_FLAG_START_WAIT="0.5", SHADOW_FLAG_TTL="0")
        waited = time.monotonic() - t0
    finally:
        timer.join()
        conn.close()
        engine.dispose()
    assert _structured(done) == 3 and waited < 30
    assert done.stderr.count("flags_start_wait_passed") == 1 and "the last-known flags" in done.stderr
    rows = _rows(pg_url, "SELECT variant, flag_source FROM calls ORDER BY ts")
    assert rows[3:] == [("structured", "last_known")] * 3
