"""A hostile value costs one record's part, never the writer: values whose methods raise any BaseException, run
forever or burn CPU, from a fresh process with the tools shadowed (``SHADOW_FLAGS``) and a SQLite call log."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

HOSTILE = textwrap.dedent(
    """
    import json, sys, time
    from collections.abc import Mapping
    import shadow
    from shadow.calllog._writer import get_writer

    class Bare(BaseException):
        pass

    class Dumps:  # a pydantic-like model whose model_dump raises KeyboardInterrupt
        model_fields = {"a": 1}
        def model_dump(self):
            raise KeyboardInterrupt("dump")

    class ItemsExit(Mapping):
        def __getitem__(self, key): return 1
        def __len__(self): return 1
        def __iter__(self): return iter(["a"])
        def items(self): raise GeneratorExit("items")

    class BareIter(Mapping):
        def __getitem__(self, key): return 1
        def __len__(self): return 1
        def __iter__(self): raise Bare("iter")

    class Endless(Mapping):
        def __getitem__(self, key): return 1
        def __len__(self): return 1
        def __iter__(self):
            i = 0
            while True:
                i += 1
                yield f"k{i}"

    class StrInterrupts(Exception):
        def __str__(self): raise KeyboardInterrupt("str")

    class StrSpins(Exception):
        def __str__(self):
            while True:  # burns CPU for good
                pass

    kind, how = sys.argv[1], sys.argv[2]
    reported = []
    shadow.configure(on_internal_error=lambda op, exc: reported.append(type(exc).__name__))
    values = {"dump": Dumps, "items_exit": ItemsExit, "bare_iter": BareIter, "endless": Endless}

    @shadow.tool
    def hostile(x: object = None) -> object:
        if kind in ("str_interrupts", "str_spins"):
            raise {"str_interrupts": StrInterrupts, "str_spins": StrSpins}[kind]()
        return values[kind]() if how == "returned" else {"ok": 1}

    @shadow.tool
    def good(i: int) -> dict:
        return {"i": i}

    try:
        hostile(values[kind]()) if how == "passed" else hostile()
    except Exception:
        pass
    for i in range(100):
        good(i)
    started = time.monotonic()
    flushed = shadow.flush(30)
    stats = get_writer().stats
    print(json.dumps({"flushed": flushed, "seconds": time.monotonic() - started, "dropped": stats.dropped,
                      "failed_builds": stats.failed_builds, "reasons": dict(stats.reasons),
                      "reported": reported}))
    """
)


def _run(tmp_path: Path, *args: str, script: str = HOSTILE) -> tuple[dict[str, Any], Path]:
    db = tmp_path / "shadow.db"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SHADOW_FLAGS": "*=shadow", "SHADOW_DB_URL": f"sqlite:///{db}",
           "SHADOW_FINGERPRINT_KEY": "k" * 32}
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), db


def _stored(db: Path, tool: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM calls WHERE tool = ?", (tool,)).fetchone()[0])


@pytest.mark.parametrize(("kind", "how"), [
    ("dump", "returned"), ("dump", "passed"), ("items_exit", "returned"), ("items_exit", "passed"),
    ("bare_iter", "returned"), ("bare_iter", "passed"), ("str_interrupts", "raised"),
])
def test_a_value_raising_any_base_exception_costs_its_part_and_every_later_record_is_stored(
        tmp_path: Path, kind: str, how: str) -> None:
    result, db = _run(tmp_path, kind, how)
    assert result["flushed"] is True
    assert _stored(db, "good") == 100
    assert _stored(db, "hostile") == 1  # stored without the part that raised
    assert result["dropped"] == 0
    assert result["reasons"].get("record_part_failed", 0) >= 1
    assert {"KeyboardInterrupt", "GeneratorExit", "Bare"} & set(result["reported"])  # through on_internal_error


@pytest.mark.parametrize("how", ["returned", "passed"])
def test_a_mapping_whose_iteration_never_ends_is_cut_at_the_walk_budget(tmp_path: Path, how: str) -> None:
    result, db = _run(tmp_path, "endless", how)
    assert result["flushed"] is True and result["seconds"] < 20
    assert _stored(db, "good") == 100
    assert _stored(db, "hostile") == 1
    assert result["reasons"].get("walk_budget", 0) >= 1
    with sqlite3.connect(db) as conn:
        payloads = [json.loads(p) for p, in conn.execute("SELECT legacy_payload FROM calls WHERE tool='hostile'")]
        args = [json.loads(a) for a, in conn.execute("SELECT args FROM calls WHERE tool='hostile'")]
    cut = payloads[0] if how == "returned" else args[0]  # cut at the budget, then capped to the stored size
    assert isinstance(cut, dict) and cut.get("_truncated") is True


def test_user_code_that_burns_cpu_forever_on_the_writer_thread_costs_one_record(tmp_path: Path) -> None:
    result, db = _run(tmp_path, "str_spins", "raised")
    assert result["flushed"] is True
    assert _stored(db, "good") == 100
    assert result["failed_builds"] == 1 and result["reasons"].get("build_cpu_bound") == 1
    assert "TimeoutError" in result["reported"]


KILLED = textwrap.dedent(
    """
    import ctypes, json, time
    import shadow
    from shadow.calllog._writer import get_writer

    reported = []
    shadow.configure(on_internal_error=lambda op, exc: reported.append(op))

    @shadow.tool
    def good(i: int) -> dict:
        return {"i": i}

    good(-1)
    assert shadow.flush(10)
    writer = get_writer()
    thread = writer._thread
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(SystemExit))
    writer._wake.set()
    thread.join(10)
    for i in range(100):
        good(i)
    flushed = shadow.flush(20)
    print(json.dumps({"dead": not thread.is_alive(), "flushed": flushed, "reasons": dict(writer.stats.reasons),
                      "reported": reported}))
    """
)


def test_a_writer_thread_that_dies_is_restarted_by_the_next_submit_and_counted(tmp_path: Path) -> None:
    result, db = _run(tmp_path, script=KILLED)
    assert result["dead"] is True
    assert result["flushed"] is True
    assert _stored(db, "good") == 101
    assert result["reasons"].get("writer_restarted") == 1
    assert "writer.died" in result["reported"]
