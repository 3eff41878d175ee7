"""A bad record in a transcript is skipped with its place and the reason, the rest is imported; a conversation id
reused with other content is reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from shadow.transcripts import ImportOptions, import_files

DEPTH = 100_000
NESTED = "[" * DEPTH + "]" * DEPTH


def conv(cid: str, tool: str = "lookup", arguments: str = '{"id": 7}', result: str = "Error: not found") -> str:
    return json.dumps({"conversation_id": cid, "messages": [
        {"role": "user", "content": "find it"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                              "function": {"name": tool, "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
        {"role": "assistant", "content": "done"}]})


BAD = {
    "deep nesting in the file": conv("bad")[:-1] + ', "meta": ' + NESTED + "}",
    "deep nesting in the arguments": conv("bad", arguments='{"q": ' + NESTED + "}"),
    "deep nesting in the result": conv("bad", result='{"error": ' + NESTED + "}"),
    "a huge integer": conv("bad")[:-1] + ', "n": 1' + "0" * 5000 + "}",
    "a lone surrogate in the tool name": conv("bad", tool="look\ud800up"),
    "a lone surrogate in the conversation id": conv("bad\ud800"),
    "a NUL in the tool name": conv("bad", tool="look\x00up"),
    "a NUL in the conversation id": conv("bad\x00"),
}


def _stored(url: str) -> list[str]:
    engine = create_engine(url)
    with engine.connect() as conn:
        found = [r[0] for r in conn.execute(text("SELECT session_id FROM calls ORDER BY session_id"))]
    engine.dispose()
    return found


@pytest.mark.parametrize("bad", BAD.values(), ids=BAD.keys())
def test_a_bad_record_is_skipped_with_its_line_and_the_rest_imported(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([conv("good-a"), bad, conv("good-b")]) + "\n", encoding="utf-8", errors="surrogatepass")
    url = f"sqlite:///{tmp_path / 'shadow.db'}"
    summary = import_files([path], url, ImportOptions(fmt="openai"))
    assert _stored(url) == ["good-a", "good-b"]
    assert summary.skipped == 1
    assert summary.problems[0].where.endswith("line 2")


def test_bad_records_never_reach_postgresql_and_the_rest_is_imported(tmp_path: Path, pg_url: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([conv("good-a"), *BAD.values(), conv("good-b")]) + "\n", encoding="utf-8",
                    errors="surrogatepass")
    summary = import_files([path], pg_url, ImportOptions(fmt="openai"))
    assert _stored(pg_url) == ["good-a", "good-b"]
    assert summary.skipped == len(BAD)


def test_a_conversation_id_reused_with_other_content_is_reported(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shadow.db'}"
    first, second, again = tmp_path / "1.jsonl", tmp_path / "2.jsonl", tmp_path / "3.jsonl"
    first.write_text(conv("reused") + "\n")
    second.write_text(conv("reused", tool="search", arguments='{"q": "x"}') + "\n")
    again.write_text(conv("reused") + "\n")
    import_files([first], url, ImportOptions(fmt="openai"))
    reused = import_files([second], url, ImportOptions(fmt="openai"))
    assert [(p.where, "different content" in p.message) for p in reused.problems] == [("conversation 'reused'", True)]
    assert import_files([again], url, ImportOptions(fmt="openai")).problems == []  # the same content: no problem
