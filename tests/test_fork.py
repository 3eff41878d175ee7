"""Fork safety: a lock held by another thread at ``fork`` never hangs the child; forked workers under busy threads
all log their calls."""

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

# (module that owns the lock, attribute, setup in the parent, the child's public operation that needs the lock)
LOCKS = {
    "sessions": ("shadow._sessions", "_counters_lock", "lookup('warm')",
                 "with shadow.session('child-new'): lookup('x')"),
    "ids": ("shadow._ids", "_lock", "lookup('warm')", "shadow.mark('end')"),
    "engines": ("shadow.calllog._db", "_lock", "lookup('warm'); shadow.flush(5)",
                "lookup('x'); assert shadow.flush(5)"),
    "config": ("shadow._config", "_lock", "lookup('warm')", "shadow.configure(flush_interval=0.25)"),
    "flags": ("shadow.flags._db", "_lock", "", "lookup('x')"),
    "migrations": ("shadow.calllog._migrate", "_lock", "", "lookup('x'); assert shadow.flush(5)"),
    "fingerprint key": ("shadow._fingerprint", "_lock", "", "lookup('x'); assert shadow.flush(5)"),
}

_HELD = textwrap.dedent('''
    import importlib, os, threading
    import shadow

    @shadow.tool(name="lookup")
    def lookup(item):
        return {{"item": item}}

    {setup}
    lock = getattr(importlib.import_module({module!r}), {attribute!r})
    held, release = threading.Event(), threading.Event()

    def holder():
        with lock:
            held.set()
            release.wait()

    threading.Thread(target=holder, daemon=True).start()
    held.wait()
    pid = os.fork()
    if pid == 0:
        threading.Timer(8, lambda: os._exit(9)).start()  # hung: exit 9 instead of hanging the test
        {operation}
        os._exit(0)
    release.set()
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status))
''')


def _env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"}
    return {**base, "PYTHONPATH": str(ROOT), "SHADOW_DB_URL": f"sqlite:///{tmp_path / 'shadow.db'}",
            "SHADOW_FLAGS": "*=shadow", "SHADOW_SPOOL": str(tmp_path / "spool"), "SHADOW_LOG_LEVEL": "ERROR"}


@pytest.mark.parametrize("name", LOCKS)
def test_a_lock_held_at_fork_does_not_hang_the_child(tmp_path: Path, name: str) -> None:
    module, attribute, setup, operation = LOCKS[name]
    code = _HELD.format(module=module, attribute=attribute, setup=setup, operation=operation)
    done = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.stdout.strip() == "child 0", done.stdout + done.stderr[-2000:]


_WORKERS = textwrap.dedent('''
    import multiprocessing, os, sys, threading, time
    import shadow

    @shadow.tool(name="lookup")
    def lookup(item):
        return {"item": item}

    stop = threading.Event()

    def busy(n):
        i = 0
        while not stop.is_set():
            with shadow.session(f"busy-{n}-{i}"):
                lookup(i)
                if i % 3 == 0:
                    shadow.mark("end")
            i += 1

    threads = [threading.Thread(target=busy, args=(n,), daemon=True) for n in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.3)

    def work(k):
        with shadow.session(f"child-{k}"):
            lookup(k)
            shadow.mark("end")
        return shadow.flush(10)

    with multiprocessing.get_context("fork").Pool(6, maxtasksperchild=1) as pool:
        results = pool.map_async(work, range(40), chunksize=1).get(timeout=150)
    stop.set()
    print(sum(results))
''')


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_forked_workers_under_busy_threads_never_hang_and_log_every_call(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _WORKERS], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=200, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "40"
    with sqlite3.connect(tmp_path / "shadow.db") as con:
        sessions = {r[0] for r in con.execute("SELECT session_id FROM calls WHERE session_id LIKE 'child-%'")}
        marks = con.execute("SELECT count(*) FROM marks WHERE session_id LIKE 'child-%'").fetchone()[0]
        intact = con.execute("PRAGMA integrity_check").fetchone()
    # a child whose store stayed locked past the 5 s deadline (the parent's threads write in a loop) keeps its
    # records in the spool for a later process of the store to replay: kept, not lost
    for line in (x for f in tmp_path.glob("spool*.spool") for x in f.read_bytes().splitlines()):
        item = json.loads(line) if line.startswith(b'{"k"') else {}
        if str(item.get("r", {}).get("session_id", "")).startswith("child-"):
            if item["k"] == "call":
                sessions.add(item["r"]["session_id"])
            else:
                marks += 1
    assert (len(sessions), marks, intact[0]) == (40, 40, "ok"), done.stderr[-3000:]


_PARENT_CLOSES = textwrap.dedent('''
    import os, threading
    import shadow
    from shadow.calllog import _db

    @shadow.tool(name="lookup")
    def lookup(item):
        return {"item": item}

    with shadow.session("parent"):
        lookup("warm")
    assert shadow.flush(10)  # the parent's pool keeps a connection to the call log open
    ready, go = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:
        threading.Timer(30, lambda: os._exit(9)).start()
        with shadow.session("child-1"):
            lookup(1)
        first = shadow.flush(10)
        os.write(ready[1], b"x")
        os.read(go[0], 1)
        with shadow.session("child-2"):
            lookup(2)
        print("child flushed", first, shadow.flush(10), flush=True)
        os._exit(0)
    os.read(ready[0], 1)
    _db.dispose_all()  # the parent closes its last connection (so SQLite checkpoints) while the child runs
    with shadow.session("parent-2"):
        lookup("again")
    assert shadow.flush(10)
    os.write(go[1], b"x")
    _, status = os.waitpid(pid, 0)
    print("child exit", os.waitstatus_to_exitcode(status))
''')


def test_a_childs_stored_calls_survive_the_parent_closing_its_connections(tmp_path: Path) -> None:
    # A child that shared its parent's SQLite state took no file locks of its own: the parent's checkpoint at close
    # reset the WAL under it, and a call the child had flushed (True) was gone.
    done = subprocess.run([sys.executable, "-c", _PARENT_CLOSES], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:2] == ["child flushed True True", "child exit 0"], done.stdout + done.stderr[-2000:]
    with sqlite3.connect(tmp_path / "shadow.db") as con:
        sessions = sorted(row[0] for row in con.execute("SELECT session_id FROM calls"))
        intact = con.execute("PRAGMA integrity_check").fetchone()
    assert (sessions, intact[0]) == (["child-1", "child-2", "parent", "parent-2"], "ok")


_MID_IMPORT = textwrap.dedent('''
    import importlib.abc, os, sys, threading, time

    loading = threading.Event()

    class Slow(importlib.abc.MetaPathFinder):
        """Makes the writer thread's import of SQLite's dialect last a second, so that the fork falls inside it."""

        def find_spec(self, name, path=None, target=None):
            if name == "sqlalchemy.dialects.sqlite.pysqlite" and threading.current_thread().name != "MainThread":
                loading.set()
                time.sleep(1.0)
            return None

    sys.meta_path.insert(0, Slow())
    import shadow

    @shadow.tool(name="lookup")
    def lookup(item):
        return {"item": item}

    with shadow.session("parent"):
        lookup(0)  # the writer thread loads SQLAlchemy for its first write: import shadow did not
    assert loading.wait(30), "the writer never imported the dialect"
    # A background thread of shadow's is importing the SQLite driver's dialect when the application forks: without
    # the fork guard the child inherits the module's import lock, held by a thread it does not have.
    pid = os.fork()
    if pid == 0:
        threading.Timer(20, lambda: os._exit(9)).start()
        with shadow.session("child"):
            lookup(1)
        os._exit(0 if shadow.flush(10) else 3)
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status), shadow.flush(10))
''')


def test_a_child_forked_while_the_writer_thread_imports_the_driver_logs_its_calls(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _MID_IMPORT], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.stdout.strip() == "child 0 True", done.stdout + done.stderr[-2000:]
    with sqlite3.connect(tmp_path / "shadow.db") as con:
        assert sorted(con.execute("SELECT session_id FROM calls").fetchall()) == [("child",), ("parent",)]


_PREFORK = textwrap.dedent('''
    import os, sys, threading
    import shadow

    @shadow.tool(name="lookup")
    def lookup(item):
        return {"item": item}

    with shadow.session("master"):  # the master loads the application and calls a tool before it forks
        lookup("boot")
    stop = threading.Event()

    def background():
        i = 0
        while not stop.is_set():
            with shadow.session(f"master-{i}"):
                lookup(i)
            i += 1

    threading.Thread(target=background, daemon=True).start()

    def handle(worker, request):
        with shadow.session(f"w{worker}-r{request}"):
            lookup(request)
            shadow.mark("end")

    pids = []
    for worker in range(8):
        pid = os.fork()
        if pid == 0:
            watchdog = threading.Timer(60, lambda: os._exit(9))
            watchdog.daemon = True
            watchdog.start()
            threads = [threading.Thread(target=handle, args=(worker, r)) for r in range(5)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if worker % 2:
                os._exit(0 if shadow.flush(20) else 3)  # as a gunicorn worker ends: no atexit
            sys.exit(0)  # a normal exit, no flush: the writer is closed at exit
        pids.append(pid)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
    stop.set()
    print(codes)
''')


@pytest.mark.timeout(180)
def test_prefork_workers_of_a_master_that_used_shadow_log_every_call_whichever_way_they_exit(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _PREFORK], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=150, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == str([0] * 8), done.stdout + done.stderr[-3000:]
    with sqlite3.connect(tmp_path / "shadow.db") as con:
        calls = con.execute("SELECT count(*), count(DISTINCT session_id) FROM calls WHERE session_id LIKE 'w%'")
        marks = con.execute("SELECT count(*) FROM marks WHERE session_id LIKE 'w%'").fetchone()
        boot = con.execute("SELECT count(*) FROM calls WHERE session_id = 'master'").fetchone()
        intact = con.execute("PRAGMA integrity_check").fetchone()
        assert (calls.fetchone(), marks[0], boot[0], intact[0]) == ((40, 40), 40, 1, "ok")


_OPENFEATURE_HELD = textwrap.dedent('''
    import os, threading
    from openfeature import api
    from openfeature.provider.in_memory_provider import InMemoryFlag, InMemoryProvider
    import shadow
    from shadow.flags._openfeature import OpenFeatureFlags

    api.set_provider(InMemoryProvider({"shadow.lookup.mode": InMemoryFlag("on", {"on": "shadow"})}), domain="fork")
    flags = OpenFeatureFlags(api.get_client("fork"), audit=False, ttl=0.0)

    @shadow.tool(name="lookup", flags=flags)
    def lookup(item):
        return {"item": item}

    with shadow.session("parent"):
        lookup("warm")
    held, release = threading.Event(), threading.Event()

    def holder():
        with flags._lock:
            held.set()
            release.wait()

    threading.Thread(target=holder, daemon=True).start()
    held.wait()
    pid = os.fork()
    if pid == 0:
        threading.Timer(8, lambda: os._exit(9)).start()  # hung: exit 9 instead of hanging the test
        with shadow.session("child"):  # a session the cache has not seen: evaluated and remembered (the lock)
            lookup("x")
        with shadow.session("parent"):  # a stale entry: refreshed in the background
            lookup("y")
        os._exit(0 if flags.flush(5) and shadow.flush(5) else 3)
    release.set()
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status))
''')


def test_the_openfeature_source_lock_held_at_fork_does_not_hang_the_child(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _OPENFEATURE_HELD], env=_env(tmp_path), capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.stdout.strip() == "child 0", done.stdout + done.stderr[-2000:]
    with sqlite3.connect(tmp_path / "shadow.db") as con:
        rows = con.execute("SELECT session_id, mode FROM calls ORDER BY session_id, seq").fetchall()
    assert sorted(rows) == [("child", "shadow"), ("parent", "shadow"), ("parent", "shadow")]


_FLAGS_EVENT_HELD = textwrap.dedent('''
    import os, threading
    import shadow
    from shadow.flags import _db as flagmod

    flags = flagmod.DbFlags(os.environ["SHADOW_DB_URL"])
    assert flags.wait(10)
    held, release = threading.Event(), threading.Event()

    def holder():  # a thread inside Event.set() or wait() at fork holds the event's own lock
        with flags._loaded._cond:
            held.set()
            release.wait()

    threading.Thread(target=holder, daemon=True).start()
    held.wait()
    pid = os.fork()
    if pid == 0:
        threading.Timer(8, lambda: os._exit(9)).start()
        os._exit(0 if flags.wait(5) else 3)
    release.set()
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status))
''')


def test_waiting_for_the_flags_in_a_child_forked_mid_wait_does_not_hang(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _FLAGS_EVENT_HELD], env=_env(tmp_path), capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.stdout.strip() == "child 0", done.stdout + done.stderr[-2000:]


_NO_FLUSH = textwrap.dedent('''
    import multiprocessing, sys, threading, time
    import shadow

    @shadow.tool(name="lookup")
    def lookup(item):
        return {"item": item}

    stop = threading.Event()

    def busy():  # a service's own traffic meanwhile (about 1,000 calls a second)
        while not stop.is_set():
            with shadow.session("busy"):
                lookup("b")
            time.sleep(0.001)

    threading.Thread(target=busy, daemon=True).start()

    def work(k):  # no shadow.flush(): the worker's exit stores what it logged
        for i in range(5):
            with shadow.session(f"child-{k}"):
                lookup(i)
        return k

    ctx = multiprocessing.get_context("fork")
    if sys.argv[1] == "process":
        workers = [ctx.Process(target=work, args=(k,)) for k in range(8)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(60)
    else:
        pool = ctx.Pool(4)
        pool.map(work, range(8))
        pool.close()
        pool.join()
    stop.set()
''')


@pytest.mark.parametrize("how", ["process", "pool-close-join"])
def test_multiprocessing_workers_that_exit_normally_store_their_calls_without_a_flush(
        tmp_path: Path, how: str) -> None:
    done = subprocess.run([sys.executable, "-c", _NO_FLUSH, how], env=_env(tmp_path), capture_output=True,
                          text=True, timeout=200, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    with sqlite3.connect(tmp_path / "shadow.db") as con:
        logged = con.execute("SELECT count(*) FROM calls WHERE session_id LIKE 'child-%'").fetchone()[0]
    # a worker whose store stayed locked past its exit's bounded try keeps its records in the spool for a later
    # process of the store to replay: kept, not lost (lines are one JSON record each, after a header line)
    spooled = sum(1 for f in tmp_path.glob("spool*.spool") for line in f.read_bytes().splitlines()
                  if b'"session_id":"child-' in line)
    assert logged + spooled == 40, done.stderr[-3000:]
