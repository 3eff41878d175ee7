"""``shadow import`` reads at most a bounded size from a file it reads whole (one JSON document, an OTel export, a
pipe or device): a huge or endless one is refused, never read whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shadow.transcripts import ImportOptions
from shadow.transcripts._formats import FormatError
from shadow.transcripts._importer import read_file

ROOT = Path(__file__).resolve().parents[2]


def test_one_json_document_over_the_bound_is_refused_by_its_size(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    record = {"conversation_id": "c", "messages": [{"role": "user", "content": "hi"}]}
    path.write_text(json.dumps([{**record, "conversation_id": f"c{i}"} for i in range(100)], indent=2),
                    encoding="utf-8")
    size = path.stat().st_size
    with pytest.raises(FormatError, match=rf"big.json holds more than {size - 1} bytes.*--max-file-mb"):
        read_file(path, ImportOptions(fmt="openai", max_file_bytes=size - 1))
    assert len(read_file(path, ImportOptions(fmt="openai", max_file_bytes=size)).parsed.conversations) == 100


def test_an_otel_export_in_json_lines_keeps_the_file_bound(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"  # one conversation's spans may be anywhere in the file: it is held whole
    spans = [{"name": "execute_tool lookup", "traceId": "ab", "spanId": f"{i:04x}", "startTimeUnixNano": 1 + i,
              "attributes": {"gen_ai.tool.name": "lookup", "gen_ai.conversation.id": "c"}} for i in range(50)]
    path.write_text("\n".join(json.dumps(span) for span in spans) + "\n", encoding="utf-8")
    size = path.stat().st_size
    with pytest.raises(FormatError, match=rf"spans.jsonl holds more than {size - 1} bytes"):
        read_file(path, ImportOptions(fmt="otel", max_file_bytes=size - 1))
    [conversation] = read_file(path, ImportOptions(fmt="otel", max_file_bytes=size)).parsed.conversations
    assert len(conversation.events) == 50


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_an_endless_file_stops_at_the_bound() -> None:
    with pytest.raises(FormatError, match="/dev/zero holds more than 65536 bytes"):
        read_file("/dev/zero", ImportOptions(fmt="openai", max_file_bytes=65536))


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_the_command_line_refuses_dev_zero_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "shadow", "import", "/dev/zero", "--input-format", "otel", "--max-file-mb", "1",
         "--db-url", f"sqlite:///{tmp_path / 'shadow.db'}"],
        check=False, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("shadow: /dev/zero holds more than 1 MiB, the most shadow import reads from one "
                                   "file; split it (for example: split -l 100000 FILE part-) or raise --max-file-mb")
    assert not (tmp_path / "shadow.db").exists()
