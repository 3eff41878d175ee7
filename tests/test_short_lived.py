"""Short-lived processes: the first calls of a process are served by the flags in force and logged, with no ``wait()``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shadow.calllog import _db as db
from shadow.flags._db import DbFlags
from tests._sql import rows as _rows

REPO = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent(
    """
    import sys, time
    import shadow

    @shadow.tool
    def create_task(title: str) -> dict:
        return {"id": 1, "title": title}

    @shadow.tool
    def plain(x: int) -> int:
        return x

    with shadow.session("short"):
        for i in range(int(sys.argv[1])):
            t0 = time.perf_counter()
            out = create_task(f"t{i}")
            plain(i)
            print(type(out).__name__, out.get("ok") is None, round((time.perf_counter() - t0) * 1e3, 3))
    if sys.argv[2] == "flush":
        shadow.flush()
    """
)


def _run_child(url: str, tmp: Path, calls: int, flush: bool) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "SHADOW_DB_URL": url, "SHADOW_SPOOL": str(tmp / "spool")}
    env.pop("SHADOW_FLAGS", None)
    done = subprocess.run([sys.executable, "-c", CHILD, str(calls), "flush" if flush else "exit"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize("flush", [True, False], ids=["flush", "no-flush"])
def test_every_call_of_a_shadowed_tool_in_a_short_process_is_logged(tmp_path: Path, flush: bool) -> None:
    url = f"sqlite:///{tmp_path}/shadow.db"
    DbFlags(url).set("create_task", "shadow")
    db.dispose_all()
    lines = _run_child(url, tmp_path, 20, flush)
    assert len(lines) == 20
    assert all(line.startswith("dict True") for line in lines)  # legacy result, unchanged
    rows = _rows(url, "SELECT tool, mode, variant, seq FROM calls ORDER BY seq")
    assert [r[0] for r in rows] == ["create_task"] * 20
    assert {r[1] for r in rows} == {"shadow"} and {r[2] for r in rows} == {"legacy"}
    # The legacy tool `plain` is not logged; its calls made before the flags were known keep seq consecutive.
    marks = _rows(url, "SELECT kind, seq FROM marks")
    seqs = sorted([int(str(r[3])) for r in rows] + [int(str(m[1])) for m in marks])
    assert seqs == list(range(1, len(seqs) + 1))
    assert {m[0] for m in marks} <= {"unlogged"}


def test_a_cutover_tool_is_served_structured_from_the_first_call_of_a_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/shadow.db"
    DbFlags(url).set("create_task", "cutover")
    db.dispose_all()
    lines = _run_child(url, tmp_path, 20, False)
    rows = _rows(url, "SELECT mode, variant FROM calls WHERE tool = 'create_task'")
    assert len(rows) == 20
    assert {(r[0], r[1]) for r in rows} == {("cutover", "structured")}
    assert all(line.split()[1] == "False" for line in lines)  # every call served the structured payload


def test_no_call_is_logged_when_no_tool_is_shadowed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/shadow.db"
    DbFlags(url).set("other", "shadow")
    db.dispose_all()
    _run_child(url, tmp_path, 5, False)
    assert _rows(url, "SELECT count(*) FROM calls") == [(0,)]


THREE = textwrap.dedent(
    """
    import json, shadow

    @shadow.tool
    def create_task(title: str) -> dict:
        return {"id": 1, "title": title}

    print(json.dumps([str(create_task(f"t{i}")) for i in range(3)]))
    """
)


def _three(url: str, tmp: Path, **env: str) -> tuple[list[str], str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"}
    done = subprocess.run([sys.executable, "-c", THREE], capture_output=True, text=True, timeout=120, check=False,
                          env={**base, "PYTHONPATH": str(REPO), "SHADOW_DB_URL": url, "XDG_CACHE_HOME": str(tmp),
                               "SHADOW_SPOOL": str(tmp / "spool"), **env})
    assert done.returncode == 0, done.stderr
    served: list[str] = json.loads(done.stdout)
    return served, done.stderr


def _structured(served: list[str]) -> int:
    return sum(1 for text in served if text.startswith('{"ok":true'))  # a legacy dict's str() is no JSON


@pytest.mark.parametrize("last_known", ["off", "default"])
def test_a_process_making_three_calls_and_exiting_serves_three_structured(
        db_url: str, tmp_path: Path, last_known: str) -> None:
    """The flag in the database at cutover 100%: a fresh process is served by it from its first call, with the
    last-known file (read at start) and without (the first read waits, within the start bound)."""
    DbFlags(db_url, last_known=str(tmp_path / "admin.json")).set("create_task", "cutover", 100)
    db.dispose_all()
    env = {"SHADOW_FLAGS_LAST_KNOWN": "off"} if last_known == "off" else {}
    for _run in range(2):  # the second run starts on the last-known file the first one wrote (when not off)
        served, _ = _three(db_url, tmp_path, **env)
        assert _structured(served) == 3
    rows = _rows(db_url, "SELECT mode, variant, flag_source FROM calls")
    assert len(rows) == 6 and {(r[0], r[1]) for r in rows} == {("cutover", "structured")}
    sources = {r[2] for r in rows}
    assert sources == {"database"} if last_known == "off" else sources <= {"database", "last_known"}


def test_flags_from_shadow_flags_need_no_wait(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/shadow.db"
    served, _ = _three(url, tmp_path, SHADOW_FLAGS="create_task=cutover", SHADOW_FLAG_START_WAIT="0")
    assert _structured(served) == 3
    assert _rows(url, "SELECT DISTINCT variant, flag_source FROM calls") == [("structured", "env")]
