"""``shadow import`` streams JSON lines: memory stays flat however long the file, pipes and endless inputs are
bounded, and a file that fails its check stops the import before anything is written."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from shadow.transcripts import ImportOptions, import_files

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024
#: Runs one command as a child and prints the child's peak resident set, in KiB (Linux), as its last line.
PEAK = ("import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stdout.write(done.stdout); sys.stderr.write(done.stderr)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(done.returncode)\n")


def conv(i: int, *, user: str = "find it", cid: bool = True, calls: bool = True) -> str:
    messages: list[dict[str, object]] = [{"role": "user", "content": user}]
    if calls:
        messages += [
            {"role": "assistant", "tool_calls": [{"id": "a", "type": "function",
                                                  "function": {"name": "lookup", "arguments": json.dumps({"n": i})}}]},
            {"role": "tool", "tool_call_id": "a", "content": "Error: not found"}]
    messages.append({"role": "assistant", "content": "done"})
    record: dict[str, object] = {"messages": messages}
    if cid:
        record["conversation_id"] = f"c{i}"
    return json.dumps(record)


def long_lines(i: int) -> str:
    """A conversation whose line is 64 KiB long (the user's words are read, never stored)."""
    return conv(i, user="x" * 65536)


def many_lines(i: int) -> str:
    """About 1 KiB lines: a tenth with a call, the others without one, one in seven not JSON (skipped)."""
    if i % 7 == 3:
        return conv(i, user="y" * 900) + " and more"
    return conv(i, user="y" * 900, calls=i % 10 == 0)


def write_lines(path: Path, megabytes: int, line: Callable[[int], str]) -> int:
    written = count = 0
    with path.open("w", encoding="utf-8") as out:
        while written < megabytes * MIB:
            text = line(count) + "\n"
            out.write(text)
            written, count = written + len(text), count + 1
    return count


def shadow_import(*args: str, cwd: Path, peak: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "shadow", "import", *args]
    if peak:
        command = [sys.executable, "-c", PEAK, *command]
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=300, env=env, cwd=cwd)


def stored(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM calls").fetchone()[0])


@pytest.mark.parametrize("line", [
    pytest.param(long_lines, id="64 KiB lines"),
    pytest.param(many_lines, id="1 KiB lines", marks=pytest.mark.slow),  # about 20 s: 200,000 lines
])
def test_peak_memory_does_not_grow_with_a_json_lines_file(tmp_path: Path, line: Callable[[int], str]) -> None:
    peaks, counts = {}, {}
    for megabytes in (20, 200):
        path = tmp_path / f"{megabytes}.jsonl"
        counts[megabytes] = write_lines(path, megabytes, line)
        db = tmp_path / f"{megabytes}.db"
        done = shadow_import(str(path), "--input-format", "openai", "--db-url", f"sqlite:///{db}", "-f", "json",
                             cwd=tmp_path, peak=True)
        path.unlink()
        assert done.returncode == 0, done.stderr
        *summary, peak = done.stdout.splitlines()
        peaks[megabytes] = int(peak) / 1024  # MiB
        found = json.loads("\n".join(summary))
        assert found["conversations"] + found["skipped"] == counts[megabytes]
        assert stored(db) == found["calls"] > 0
    print(f"peak RSS of shadow import: 20 MB file {peaks[20]:.0f} MiB, 200 MB file {peaks[200]:.0f} MiB")
    # Holding the bigger file, or anything per line, would add hundreds of MiB; reading it line by line adds none.
    assert peaks[200] < peaks[20] + 40, peaks


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_an_endless_stream_of_valid_lines_through_a_pipe_is_refused_in_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "endless.jsonl"
    os.mkfifo(fifo)

    def endless() -> None:
        try:
            with fifo.open("w", encoding="utf-8") as out:
                i = 0
                while True:
                    out.write(conv(i) + "\n")
                    i += 1
        except (BrokenPipeError, ValueError):  # the reader stopped
            return

    writer = threading.Thread(target=endless, daemon=True)
    writer.start()
    done = shadow_import(str(fifo), "--input-format", "openai", "--max-file-mb", "2", "--db-url",
                         f"sqlite:///{tmp_path / 'shadow.db'}", cwd=tmp_path)
    writer.join(timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (f"shadow: {fifo} holds more than 2 MiB, the most shadow import reads from one file;"
                                   " split it (for example: split -l 100000 FILE part-) or raise --max-file-mb")
    assert not (tmp_path / "shadow.db").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_finite_stream_through_a_pipe_is_imported(tmp_path: Path) -> None:
    fifo = tmp_path / "lines.jsonl"
    os.mkfifo(fifo)

    def lines() -> None:
        with fifo.open("w", encoding="utf-8") as out:
            out.writelines(conv(i) + "\n" for i in range(300))

    writer = threading.Thread(target=lines, daemon=True)
    writer.start()
    done = shadow_import(str(fifo), "--input-format", "openai", "--db-url", f"sqlite:///{tmp_path / 'shadow.db'}",
                         cwd=tmp_path)
    writer.join(timeout=60)
    assert done.returncode == 0, done.stderr
    assert "300 conversations, 300 calls" in done.stdout
    assert stored(tmp_path / "shadow.db") == 300


def test_a_line_over_the_line_bound_stops_the_import_naming_its_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [conv(i) for i in range(1, 1200)]  # more than two batches of records before the long line
    path.write_text("\n".join([*lines, conv(0, user="z" * (2 * MIB)), conv(9999)]) + "\n", encoding="utf-8")
    db = tmp_path / "shadow.db"
    done = shadow_import(str(path), "--input-format", "openai", "--max-line-mb", "1", "--db-url", f"sqlite:///{db}",
                         cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (f"shadow: {path}:line 1200 is longer than 1 MiB, the most shadow import reads as "
                                   "one line of a JSON lines file; check that the file is JSON lines, or raise "
                                   "--max-line-mb")
    assert stored(db) == 0
    again = shadow_import(str(path), "--input-format", "openai", "--db-url", f"sqlite:///{db}", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert stored(db) == 1201


def test_a_bad_file_after_a_good_one_stops_the_import_before_anything_is_written(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text("\n".join(conv(i) for i in range(600)) + "\n", encoding="utf-8")
    bad.write_bytes(conv(1000).encode() + b"\n" + conv(1001).encode().replace(b"find it", b"find \xff it") + b"\n")
    db = tmp_path / "shadow.db"
    done = shadow_import(str(good), str(bad), "--input-format", "openai", "--db-url", f"sqlite:///{db}",
                         cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().startswith(f"shadow: {bad}:line 2 is not UTF-8 text (byte ")
    assert stored(db) == 0


def test_sessions_without_an_id_are_named_from_the_files_digest_and_position(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(conv(i, cid=False) for i in range(3)) + "\n\n" + f"[{conv(3, cid=False)}, "
                    f"{conv(4, cid=False)}]\n", encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'shadow.db'}"
    import_files([path], url, ImportOptions("openai"))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    with sqlite3.connect(tmp_path / "shadow.db") as conn:
        found = [r[0] for r in conn.execute("SELECT session_id FROM calls ORDER BY session_id")]
    assert found == [f"import-{digest}-{i}" for i in range(5)]  # as when the file was read whole: ids unchanged


def test_problems_past_the_first_thousand_are_counted_not_listed(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([conv(0), *("{not json" for _ in range(1500)), conv(1)]) + "\n", encoding="utf-8")
    done = shadow_import(str(path), "--input-format", "openai", "--db-url", f"sqlite:///{tmp_path / 'shadow.db'}",
                         cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 conversations, 2 calls, 2 errors, 0 user turns, 2 ends, 1500 skipped" in done.stdout
    shown = done.stderr.splitlines()
    assert sum(line.startswith(f"{path}:line ") for line in shown) == 1000
    assert "... and 500 more skipped records, not listed" in shown


def test_json_lines_have_a_line_bound_and_no_file_bound(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(conv(i) for i in range(40)) + "\n", encoding="utf-8")
    options = ImportOptions("openai", max_file_bytes=path.stat().st_size // 4, max_line_bytes=len(conv(39)))
    summary = import_files([path], f"sqlite:///{tmp_path / 'shadow.db'}", options)
    assert (summary.conversations, summary.calls, summary.skipped) == (40, 40, 0)
