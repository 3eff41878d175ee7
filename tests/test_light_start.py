"""A light start: ``import shadow`` and ``@shadow.tool`` load no heavy module, and a process's first call loads none
in its caller's thread nor waits longer than the start bound (``SHADOW_FLAG_START_WAIT``), whatever the database."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What ``import shadow`` used to load (SQLAlchemy and Alembic through the flags, jsonschema through the contract).
HEAVY = ("sqlalchemy", "alembic", "jsonschema", "psycopg", "structlog")

_IMPORT_AND_DECORATE = textwrap.dedent(f"""
    import json, sys
    import shadow

    HEAVY = {HEAVY!r}
    after_import = sorted(m for m in HEAVY if m in sys.modules)

    @shadow.tool
    def create_task(title: str) -> dict:
        return {{"id": 1, "title": title}}

    @shadow.tool(name="count")
    async def count(n: int) -> int:
        return n

    print(json.dumps([after_import, sorted(m for m in HEAVY if m in sys.modules)]))
""")


def _env(tmp_path: Path, url: str, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"}
    return {**base, "PYTHONPATH": str(ROOT), "SHADOW_DB_URL": url, "SHADOW_SPOOL": str(tmp_path / "spool"),
            "SHADOW_LOG_LEVEL": "ERROR", **extra}


@pytest.mark.parametrize("url", ["sqlite:///{tmp}/shadow.db", "postgresql://shadow:secret@127.0.0.1:1/nowhere"],
                         ids=["sqlite", "postgres"])
def test_import_shadow_and_decorating_tools_load_no_heavy_module(tmp_path: Path, url: str) -> None:
    done = subprocess.run([sys.executable, "-c", _IMPORT_AND_DECORATE], cwd=tmp_path, capture_output=True, text=True,
                          env=_env(tmp_path, url.format(tmp=tmp_path)), timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == [[], []]
    assert list(tmp_path.iterdir()) == []  # and nothing was created


#: What ``import shadow`` no longer loads either (issue 29): none is needed by a call, or each is loaded where it is
#: (under the fork guard when that is a background thread). ``uuid`` is not listed: orjson imports it.
DEFERRED = ("importlib.metadata", "email", "socket", "tempfile", "ctypes", "decimal", "importlib.resources",
            "shadow.normalize", "shadow.tokens", "shadow.calllog._otel")

_WHAT_IMPORT_LOADS = textwrap.dedent(f"""
    import json, sys
    before = set(sys.modules)  # what the interpreter's start (site) loaded is not import shadow's
    import shadow
    from shadow.contract._phrases import PHRASES
    from shadow._scrub import _BY_START, _words

    @shadow.tool
    def create_task(title: str) -> dict:
        return {{"id": 1, "title": title}}

    loaded = set(sys.modules) - before
    deferred = sorted(m for m in loaded if m in {DEFERRED!r})
    compiled = sum(getattr(phrase, "_compiled", True) is not None for phrase in PHRASES) + len(_BY_START) + len(_words)
    normalize = shadow.normalize.http  # served on first use
    print(json.dumps([deferred, compiled, "shadow.normalize" in sys.modules]))
""")


def test_import_shadow_loads_none_of_the_deferred_modules_and_compiles_no_phrase_or_token_pattern(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/shadow.db"
    done = subprocess.run([sys.executable, "-c", _WHAT_IMPORT_LOADS], cwd=tmp_path, capture_output=True, text=True,
                          env=_env(tmp_path, url), timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == [[], 0, True]


#: A process that makes one call, with every first import of a heavy module slowed down by ``argv[1]`` seconds (a
#: slow disk): the caller must never wait for one, and must not wait for the flags longer than the start bound.
_FIRST_CALL = textwrap.dedent(f"""
    import importlib.abc, json, sys, threading, time

    HEAVY = {HEAVY!r}
    SLOW = float(sys.argv[1])
    first = {{}}

    class Slow(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            top = name.partition(".")[0]
            if top in HEAVY and top not in first:
                first[top] = threading.current_thread().name
                time.sleep(SLOW)
            return None

    sys.meta_path.insert(0, Slow())
    t0 = time.perf_counter()
    import shadow

    @shadow.tool
    def create_task(title: str) -> dict:
        return {{"id": 1, "title": title}}

    t1 = time.perf_counter()
    out = create_task("x")
    t2 = time.perf_counter()
    print(json.dumps({{"import_s": t1 - t0, "first_call_s": t2 - t1, "structured": str(out).startswith('{{"ok":'),
                      "in_caller": sorted(m for m, thread in first.items() if thread == "MainThread")}}), flush=True)
""")

BOUND = 0.5  # SHADOW_FLAG_START_WAIT in these processes
SLOW = 2.0  # each heavy module's first import


def _set_cutover(tmp_path: Path, url: str) -> None:
    done = subprocess.run([sys.executable, "-m", "shadow.cli", "flags", "set", "create_task", "cutover", "--force",
                           "--reason", "light start", "--db-url", url], cwd=tmp_path, env=_env(tmp_path, url),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def _lock(path: Path) -> sqlite3.Connection:
    """Hold the SQLite file exclusively (readers too wait on it) until the connection is closed."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA locking_mode=EXCLUSIVE")
    conn.execute("BEGIN EXCLUSIVE")
    conn.execute("UPDATE flags SET percent = percent")
    return conn


@pytest.mark.parametrize("database", ["existing", "missing", "locked"])
def test_the_first_call_loads_nothing_heavy_in_its_thread_and_waits_at_most_the_start_bound(
        tmp_path: Path, database: str) -> None:
    path = tmp_path / "shadow.db"
    url = f"sqlite:///{path}"
    if database != "missing":
        _set_cutover(tmp_path, url)
    lock = _lock(path) if database == "locked" else None
    # no last-known file: the first call waits for the first read of the database (at most the bound)
    env = _env(tmp_path, url, SHADOW_FLAG_START_WAIT=str(BOUND), SHADOW_FLAGS_LAST_KNOWN="off")
    with subprocess.Popen([sys.executable, "-c", _FIRST_CALL, str(SLOW)], cwd=tmp_path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None
        line = child.stdout.readline()
        if lock is not None:
            lock.close()
        _, err = child.communicate(timeout=120)
    assert line, err[-2000:]
    got = json.loads(line)
    assert got["in_caller"] == [], got
    assert got["first_call_s"] < BOUND + 1.0 < SLOW, got
    assert got["structured"] is (database == "existing"), got  # missing: all legacy; locked: legacy past the bound
    if database == "missing":
        assert not path.exists()  # nothing was shadowed: no call log made


_NOTHING_LEFT = textwrap.dedent("""
    import datetime as dt, json, sys
    from shadow._ids import new_id
    from shadow.calllog._records import MarkRecord
    from shadow.calllog._store import SqlStore
    from shadow.flags._db import DbFlags

    store = SqlStore(sys.argv[1])
    store.prepare()  # what the writer's thread does before its first write, under the fork guard
    loaded = set(sys.modules)
    store.write([MarkRecord(id=new_id(), session_id="s", seq=1, ts=dt.datetime.now(dt.UTC), kind="end",
                            process="1", host="h", epoch=None)])  # creates the schema (Alembic), then inserts
    now = dt.datetime.now(dt.UTC)
    counts = dict.fromkeys(("submitted", "written", "spooled", "replayed", "dropped", "rejected", "failed_builds"), 0)
    store.write_stats({"process": "1", "host": "h", **counts, "started_at": now, "updated_at": now})
    DbFlags(sys.argv[1]).states()
    print(json.dumps(sorted(set(sys.modules) - loaded)))
""")


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_what_the_writer_loads_before_its_first_write_leaves_nothing_to_import_while_the_app_may_fork(
        tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    url = f"sqlite:///{tmp_path}/shadow.db" if backend == "sqlite" else request.getfixturevalue("pg_url")
    done = subprocess.run([sys.executable, "-c", _NOTHING_LEFT, url], cwd=tmp_path, env=_env(tmp_path, url),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == []
