"""What ``import shadow`` defers and a background thread of shadow's imports later is imported under the fork guard.

A thread importing a module holds that module's import lock; a child forked meanwhile inherits the lock with no
thread to release it, and its own import of the module hangs (a prefork worker that never stores a record). So a
module first imported by the writer's, the flag refresh's or the watchdog's thread is imported under
``shadow._lazy``'s guard, which ``fork`` waits for.
"""

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


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"}
    return {**base, "PYTHONPATH": str(ROOT), "SHADOW_DB_URL": f"sqlite:///{tmp_path / 'shadow.db'}",
            "SHADOW_SPOOL": str(tmp_path / "spool"), "SHADOW_LOG_LEVEL": "ERROR", **extra}


#: A process whose writer thread is slowed down inside the first import of ``argv[1]`` (its module body runs 1.5 s
#: late, the module's import lock held) when the application forks; the child then makes calls of its own.
_FORK_MID_IMPORT = textwrap.dedent('''
    import importlib.abc, importlib.machinery, os, sys, threading, time

    SLOWED = sys.argv[1]
    inside = threading.Event()

    class SlowLoader(importlib.abc.Loader):
        def __init__(self, real):
            self.real = real

        def create_module(self, spec):
            return self.real.create_module(spec)

        def exec_module(self, module):
            inside.set()
            time.sleep(1.5)
            self.real.exec_module(module)

    class Slow(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name != SLOWED or threading.current_thread() is threading.main_thread():
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            spec.loader = SlowLoader(spec.loader)
            return spec

    sys.meta_path.insert(0, Slow())
    import shadow

    @shadow.tool(name="lookup")
    def lookup(item):
        if item == "bad":
            raise ValueError("item must be at most 3 characters; token ghp_" + "a" * 36)
        return {"item": item}

    with shadow.session("parent"):
        lookup("boot")  # the writer's thread builds its record: the rules' fingerprint reads shadow's release
    imported_in_parent = SLOWED in sys.modules
    inside.wait(20)
    pid = os.fork()
    if pid == 0:
        threading.Timer(20, lambda: os._exit(9)).start()  # hung: exit 9 instead of hanging the test
        with shadow.session("child"):
            lookup("x")
            try:
                lookup("bad")
            except ValueError:
                pass
        os._exit(0 if shadow.flush(15) else 3)
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status), inside.is_set(), imported_in_parent)
''')


@pytest.mark.timeout(120)
@pytest.mark.parametrize("module", ["importlib.metadata", "sqlalchemy"])
def test_a_child_forked_while_the_writer_thread_imports_what_import_shadow_deferred_stores_its_calls(
        tmp_path: Path, module: str) -> None:
    done = subprocess.run([sys.executable, "-c", _FORK_MID_IMPORT, module], env=_env(tmp_path, SHADOW_FLAGS="*=shadow"),
                          capture_output=True, text=True, timeout=90, check=False)
    # the writer's thread was inside the import at the fork (not imported by ``import shadow`` nor the caller)
    assert done.stdout.strip() == "child 0 True False", done.stdout + done.stderr[-3000:]
    with sqlite3.connect(tmp_path / "shadow.db") as con:
        rows = con.execute("SELECT session_id, outcome FROM calls ORDER BY session_id, outcome").fetchall()
    assert rows == [("child", "error"), ("child", "ok"), ("parent", "ok")]


#: Records, for each module first imported after ``import shadow``, the thread that imported it and whether that
#: thread held the fork guard; then makes calls of every kind (flags in SQLite: the refresh thread reads them).
_PROBE = textwrap.dedent('''
    import importlib.abc, json, sys, threading, time

    first = {}

    class Probe(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name not in first:
                lazy = sys.modules.get("shadow._lazy")
                first[name] = (threading.current_thread().name, bool(lazy is not None and lazy._guard._is_owned()))
            return None

    import shadow

    sys.meta_path.insert(0, Probe())

    class Slow(dict):
        def items(self):
            time.sleep(3)  # a hung build: the watchdog gives it up (build_timeout 2 s)
            return super().items()

    @shadow.tool(name="cut")
    def cut(item, token=None):
        if item == "raise":
            raise PermissionError("permission denied for key sk_live_" + "b" * 24)
        if item == "error":
            return {"error": "Rate limit exceeded. Retry after 3 seconds. password=hunter2hunter2x9"}
        if item == "payload":
            return {"ok": False, "error": {"code": "not_found", "message": "No such item.", "retryable": False,
                                           "next_action": "fix_arguments", "context": {"id": 3}, "extra": 1}}
        return {"item": item, "when": __import__("datetime").date(2024, 1, 2)}

    @shadow.tool(name="shadowed")
    def shadowed(item):
        return {"error": f"not found: no such file /tmp/{item} (status 404)"}

    for session in ("a", "b"):
        with shadow.session(session):
            for item in ("x", "raise", "error", "payload"):
                try:
                    cut(item, token="ghp_" + "c" * 36)
                except PermissionError:
                    pass
            shadowed("y")
    shadowed(Slow())
    assert shadow.flush(30)
    time.sleep(1.0)
    print(json.dumps(first))
''')


def _set(tmp_path: Path, tool: str, mode: str) -> None:
    done = subprocess.run([sys.executable, "-m", "shadow.cli", "flags", "set", tool, mode, "--force", "--reason", "t"],
                          env=_env(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.timeout(180)
def test_every_module_a_background_thread_of_shadow_imports_first_is_imported_under_the_fork_guard(
        tmp_path: Path) -> None:
    _set(tmp_path, "cut", "cutover")
    _set(tmp_path, "shadowed", "shadow")
    done = subprocess.run([sys.executable, "-c", _PROBE], env=_env(tmp_path), cwd=tmp_path, capture_output=True,
                          text=True, timeout=150, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    first: dict[str, list[object]] = json.loads(done.stdout.strip().splitlines()[-1])
    background = {name: guarded for name, (thread, guarded) in first.items() if str(thread).startswith("shadow-")}
    assert "sqlalchemy" in background  # the probe saw the writer's imports
    assert "ctypes" in background  # the watchdog's give-up
    assert [name for name, guarded in background.items() if not guarded] == []
