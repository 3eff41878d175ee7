"""``shadow import``: OpenAI, Anthropic and OTel transcripts into the call log, idempotently, with marks and rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from shadow._fingerprint import fingerprint
from shadow.calllog import _db as db
from shadow.calllog import _tables as tables
from shadow.calllog._records import CallRecord, MarkRecord, Record
from shadow.cli import app
from shadow.contract._rules import Rules
from shadow.flags._db import Variant
from shadow.testing import assert_no_leak, assert_valid_payload
from shadow.transcripts._formats import FormatError
from shadow.transcripts._importer import (
    SYNTHETIC_TIME_SOURCE,
    ImportOptions,
    Summary,
    import_files,
    read_file,
    records,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
runner = CliRunner()


def read(name: str, fmt: str, **options: Any) -> tuple[list[Record], Summary, list[tuple[str, str]]]:
    opts = ImportOptions(fmt, **options)  # type: ignore[arg-type]
    parsed = read_file(FIXTURES / name, opts)
    summary = Summary()
    found = list(records(parsed, opts, summary))
    return found, summary, [(p.where.split("/")[-1], p.message) for p in parsed.parsed.problems]


def calls(found: list[Record]) -> list[CallRecord]:
    return [r for r in found if isinstance(r, CallRecord)]


def events(found: list[Record]) -> list[tuple[Any, ...]]:
    return [(r.seq, r.tool, r.outcome, r.code) if isinstance(r, CallRecord) else (r.seq, r.kind) for r in found]


def rows(url: str, table: Any) -> list[dict[str, Any]]:
    with db.engine(url).connect() as conn:
        return [dict(r) for r in conn.execute(select(table).order_by(table.c.session_id, table.c.seq)).mappings()]


# ---------------------------------------------------------------- OpenAI


def test_openai_calls_results_user_turns_and_the_final_answer() -> None:
    found, summary, problems = read("openai_chat.json", "openai")
    assert problems == []
    assert events(found) == [
        (1, "get_weather", "ok", None),
        (2, "get_weather", "error", "upstream_timeout"),  # "Error: upstream weather service timed out"
        (3, "get_weather", "ok", None),
        (4, "user_turn"),
        (5, "book_hotel", "error", "validation_error"),  # {"error": "nights must be a whole number"}
        (6, "book_hotel", "error", "validation_error"),
        (7, "end"),
    ]
    assert (summary.conversations, summary.calls, summary.errors, summary.user_turns, summary.ends) == (1, 5, 3, 1, 1)


def test_arguments_are_fingerprinted_exactly_as_live_calls() -> None:
    found = calls(read("openai_chat.json", "openai")[0])
    assert found[0].fingerprint == fingerprint({"city": "Paris", "unit": "c"})
    assert found[0].fingerprint == found[2].fingerprint  # the same arguments in another key order
    assert found[0].args == {"city": "Paris", "unit": "c"}
    assert found[3].fingerprint == found[4].fingerprint  # the identical repeat after an error: a loop
    assert found[0].arg_hashes == {"city": fingerprint("Paris"), "unit": fingerprint("c")}


def test_records_carry_the_source_the_arm_and_valid_payloads() -> None:
    found = read("openai_chat.json", "openai")[0]
    assert {r.source for r in found} == {SYNTHETIC_TIME_SOURCE}  # the file gives no times
    for record in calls(found):
        assert (record.mode, record.variant, record.process) == ("shadow", "legacy", "import")
        assert record.schema_valid
        assert_valid_payload(record.new_payload)
    timed_out = calls(found)[1]
    assert timed_out.legacy_payload == "Error: upstream weather service timed out"
    assert (timed_out.retryable, timed_out.next_action) == (True, "retry")


def test_malformed_records_are_reported_with_their_position_and_skipped() -> None:
    found, summary, problems = read("openai_records.jsonl", "openai")
    assert problems == [
        ("openai_records.jsonl:line 3", "not JSON (Expecting value at column 1); skipped"),
        ("openai_records.jsonl:line 4", "no message list under any of messages, conversation, chat, body.messages, "
                                        "request.messages, params.messages; skipped (pass --messages-key KEY)"),
        ("openai_records.jsonl:line 5.messages[1]", "a tool result for unknown call id 'nope'; skipped"),
        ("openai_records.jsonl:line 5.messages[0].tool_calls[0]", "tool call 'x1' (lookup) has no result; skipped"),
    ]
    assert [(r.session_id, r.seq, getattr(r, "tool", getattr(r, "kind", None))) for r in found] == [
        ("conv-a", 1, "find_user"), ("conv-a", 2, "end"), ("conv-b", 1, "search")]
    assert summary.conversations == 3  # conv-d held only the orphan and the unanswered call


def test_record_time_ids_and_unparseable_arguments() -> None:
    found = read("openai_records.jsonl", "openai")[0]
    first = found[0]
    assert first.ts.isoformat().startswith("2025-03-14T09:00:00")
    assert isinstance(first, CallRecord) and first.code == "not_found"  # "Error executing tool find_user: ..."
    bad = found[2]
    assert isinstance(bad, CallRecord) and bad.args == {"_unparsed_arguments": "{not json"}


def test_messages_key_and_id_key_name_other_layouts(tmp_path: Path) -> None:
    path = tmp_path / "custom.jsonl"
    messages = [
        {"role": "assistant", "tool_calls": [{"id": "a", "type": "function",
                                              "function": {"name": "ping", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "pong"},
    ]
    path.write_text(json.dumps({"meta": {"thread": "t-77"}, "log": {"turns": messages}}) + "\n")
    default = read_file(path, ImportOptions("openai"))
    assert default.parsed.conversations == [] and len(default.parsed.problems) == 1
    found = list(records(read_file(path, ImportOptions("openai", messages_key="log.turns", id_key="meta.thread")),
                         ImportOptions("openai"), Summary()))
    assert [(r.session_id, getattr(r, "tool", None)) for r in found] == [("t-77", "ping")]


def test_a_list_of_conversations_and_legacy_function_calls(tmp_path: Path) -> None:
    path = tmp_path / "two.json"
    first = [{"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": '{"q": 1}'}},
             {"role": "function", "name": "lookup", "content": "Error: not found"}]
    second = [{"role": "assistant", "tool_calls": [{"id": "z", "type": "function",
                                                    "function": {"name": "lookup", "arguments": '{"q": 2}'}}]},
              {"role": "tool", "tool_call_id": "z", "content": "ok"}]
    path.write_text(json.dumps([first, second]))
    found = calls(list(records(read_file(path, ImportOptions("openai")), ImportOptions("openai"), Summary())))
    assert [(c.tool, c.args, c.code) for c in found] == [("lookup", {"q": 1}, "not_found"), ("lookup", {"q": 2}, None)]
    assert found[0].session_id != found[1].session_id


# ---------------------------------------------------------------- Anthropic


def test_anthropic_tool_use_results_and_the_is_error_flag() -> None:
    found, summary, problems = read("anthropic_messages.json", "anthropic")
    assert problems == [("anthropic_messages.json:[1].messages[3]", "unknown role 'robot'; skipped")]
    thread = [r for r in found if r.session_id == "thread-1"]
    assert events(thread) == [
        (1, "create_task", "error", "validation_error"),  # is_error true: "due_date must be an ISO 8601 date"
        (2, "create_task", "error", "validation_error"),  # content blocks, plus user text in the same message
        (3, "user_turn"),
        (4, "create_task", "ok", None),  # is_error false wins over text that starts with "Error"
        (5, "end"),
    ]
    first = calls(thread)[0]
    assert first.legacy_payload == {"content": "due_date must be an ISO 8601 date", "is_error": True}
    assert first.fingerprint == calls(thread)[1].fingerprint
    assert (summary.conversations, summary.calls, summary.errors) == (2, 4, 2)


def test_an_explicit_error_no_rule_maps_is_unmapped_and_rejected(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": True,
                                      "content": "it did not work"}]},
    ]}))
    [record] = calls(list(records(read_file(path, ImportOptions("anthropic")), ImportOptions("anthropic"), Summary())))
    assert (record.outcome, record.code, record.unmapped) == ("error", "rejected", True)


# ---------------------------------------------------------------- OpenTelemetry


def test_otel_execute_tool_spans_with_conversation_errors_and_user_turns() -> None:
    found, summary, problems = read("otel_otlp.json", "otel")
    assert problems == [("otel_otlp.json:resourceSpans[0].scopeSpans[0].spans[5]",
                         "an execute_tool span without gen_ai.tool.name; skipped")]
    assert {r.session_id for r in found} == {"otel-conv-1"}
    assert events(found) == [
        (1, "search_flights", "error", "rate_limited"),  # error.type 429
        (2, "search_flights", "ok", None),
        (3, "user_turn"),  # a second invoke_agent span
        (4, "book_flight", "error", "upstream_timeout"),  # error.type TimeoutError, no result recorded
    ]
    first, second, booked = calls(found)
    assert first.fingerprint == second.fingerprint == fingerprint({"from": "CDG", "to": "JFK"})
    assert (first.latency_us, booked.latency_us) == (250_000, 5_000_000)
    assert first.ts.isoformat() == "2025-03-14T09:00:01+00:00"
    assert booked.args == {"_unrecorded": "5b8efff798038103d269b633813fc60c:b000000000000003"}
    assert summary.unrecorded_arguments == 1


def test_otel_console_export_of_concatenated_spans_groups_by_trace() -> None:
    found, _summary, problems = read("otel_console.txt", "otel")
    assert problems == []
    assert [(r.session_id, r.seq, r.code) for r in calls(found)] == [
        ("trace-0af7651916cd43dd8448eb211c80319c", 1, "not_found"),
        ("trace-0af7651916cd43dd8448eb211c80319c", 2, "not_found")]


# ---------------------------------------------------------------- rules and the structured arm


def test_configured_rules_come_before_the_built_in_ones() -> None:
    rules = Rules.empty().on_result("not valid JSON", "validation_error", "The arguments are not valid JSON. "
                                    'Send a JSON object, for example {{"q": "x"}}.')
    found = calls(read("openai_records.jsonl", "openai", rules=rules)[0])
    assert [(c.tool, c.code, c.unmapped) for c in found] == [("find_user", "not_found", False),
                                                             ("search", "validation_error", False)]


def test_the_structured_arm_keeps_served_contract_payloads(tmp_path: Path) -> None:
    served = {"ok": False, "error": {"code": "rate_limited", "message": "Slow down. Retry, for example in 2 s.",
                                     "retryable": True, "next_action": "retry", "context": {"retry_after_ms": 2000}}}
    path = tmp_path / "structured.json"
    path.write_text(json.dumps([
        {"role": "assistant", "tool_calls": [{"id": "a", "type": "function",
                                              "function": {"name": "search", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": json.dumps(served)},
    ]))
    options = ImportOptions("openai", variant=Variant.STRUCTURED)
    [record] = calls(list(records(read_file(path, options), options, Summary())))
    assert (record.mode, record.variant, record.rule, record.retry_after_ms) == ("cutover", "structured", "served",
                                                                                   2000)
    assert record.new_payload == served


# ---------------------------------------------------------------- writing, idempotently


def test_importing_the_same_files_twice_adds_nothing(db_url: str) -> None:
    files = [FIXTURES / "openai_chat.json", FIXTURES / "openai_records.jsonl"]
    first = import_files(files, db_url, ImportOptions("openai"))
    assert (first.calls, first.errors, first.skipped, first.written, first.already_present) == (7, 5, 4, 10, 0)
    before = (len(rows(db_url, tables.calls)), len(rows(db_url, tables.marks)))
    second = import_files(files, db_url, ImportOptions("openai"))
    assert (second.written, second.already_present) == (0, 10)
    assert (len(rows(db_url, tables.calls)), len(rows(db_url, tables.marks))) == before == (7, 3)
    stored = rows(db_url, tables.calls)
    assert {r["source"] for r in stored} == {"import", SYNTHETIC_TIME_SOURCE}  # openai_chat.json gives no times
    assert {r["source"] for r in rows(db_url, tables.marks)} == {"import", SYNTHETIC_TIME_SOURCE}


def test_the_same_content_under_another_name_is_recognised(sqlite_url: str, tmp_path: Path) -> None:
    copy = tmp_path / "renamed.json"
    shutil.copy(FIXTURES / "openai_chat.json", copy)
    import_files([FIXTURES / "openai_chat.json"], sqlite_url, ImportOptions("openai"))
    again = import_files([copy], sqlite_url, ImportOptions("openai"))
    assert again.written == 0 and again.already_present == 7


def test_an_unreadable_file_stops_the_import_before_anything_is_written(sqlite_url: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{this is not json\nnor this")
    with pytest.raises(FormatError, match="neither JSON nor JSON lines"):
        import_files([FIXTURES / "openai_chat.json", bad], sqlite_url, ImportOptions("openai"))
    engine = db.engine(sqlite_url)
    with engine.connect() as conn:
        present = engine.dialect.has_table(conn, "calls")
        count = conn.execute(select(func.count()).select_from(tables.calls)).scalar() if present else 0
    assert count == 0


def test_no_secret_from_a_transcript_reaches_a_payload(tmp_path: Path) -> None:
    path = tmp_path / "secret.json"
    path.write_text(json.dumps([
        {"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {
            "name": "login", "arguments": json.dumps({"user": "ada", "password": "hunter2"})}}]},
        {"role": "tool", "tool_call_id": "a", "content": "Error: invalid api key sk-proj-abcdefghijklmnop1234"},
    ]))
    [record] = calls(list(records(read_file(path, ImportOptions("openai")), ImportOptions("openai"), Summary())))
    assert record.args == {"user": "ada", "password": "[REDACTED]"}
    assert record.code == "unauthenticated"
    assert_no_leak(record.new_payload, secrets=["hunter2", "sk-proj-abcdefghijklmnop1234"])
    assert "sk-proj-abcdefghijklmnop1234" not in json.dumps(record.legacy_payload)


# ---------------------------------------------------------------- the command


def test_the_command_prints_a_summary_and_json(sqlite_url: str) -> None:
    result = runner.invoke(app, ["import", str(FIXTURES / "anthropic_messages.json"), "--input-format", "anthropic",
                                 "--db-url", sqlite_url])
    assert result.exit_code == 0, result.output
    assert "2 conversations, 4 calls, 2 errors, 1 user turns, 1 ends, 1 skipped; wrote 6 new records" in result.stdout
    again = runner.invoke(app, ["import", str(FIXTURES / "anthropic_messages.json"), "--input-format", "anthropic",
                                "--db-url", sqlite_url, "-f", "json"])
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    assert (summary["written"], summary["already_present"], summary["calls"]) == (0, 6, 4)
    assert summary["problems"][0]["message"] == "unknown role 'robot'; skipped"


def test_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/dry.db"
    result = runner.invoke(app, ["import", str(FIXTURES / "otel_otlp.json"), "--input-format", "otel", "--db-url", url,
                                 "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "would write 4 new records" in result.stdout
    assert not (tmp_path / "dry.db").exists()


def test_the_command_loads_rules_from_a_file(sqlite_url: str, tmp_path: Path) -> None:
    module = tmp_path / "my_rules.py"
    module.write_text("import shadow\nRULES = shadow.Rules.default().on_result('not valid JSON', "
                      "'validation_error', 'The arguments are not JSON. Send an object, for example {{}}.')\n")
    result = runner.invoke(app, ["import", str(FIXTURES / "openai_records.jsonl"), "--input-format", "openai",
                                 "--rules", str(module), "--db-url", sqlite_url, "-f", "json"])
    assert result.exit_code == 0, result.output
    codes = {r["tool"]: r["code"] for r in rows(sqlite_url, tables.calls)}
    assert codes == {"find_user": "not_found", "search": "validation_error"}


@pytest.mark.parametrize(("args", "message"), [
    (["missing.json", "--input-format", "openai"], "no such file: missing.json"),
    (["{chat}", "--input-format", "yaml"], "'yaml' is not one of"),
    (["{chat}", "--input-format", "openai", "--rules", "no_such_rules_module"], "cannot import no_such_rules_module"),
    (["{chat}", "--input-format", "openai", "--rules", "{bad_rules}"], "defines no RULES"),
    (["{garbage}", "--input-format", "openai"], "is neither JSON nor JSON lines (line 1, column 1"),
    (["{empty}", "--input-format", "anthropic"], "is empty; pass a JSON or JSON lines file"),
    (["{chat}", "--input-format", "openai", "--db-url", "mysql://x@y/z"], "supports SQLite and PostgreSQL"),
])
def test_bad_input_gets_a_clear_error(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "garbage.json").write_text("garbage, not json")
    (tmp_path / "empty.json").write_text("  \n")
    (tmp_path / "bad_rules.py").write_text("X = 1\n")
    names = {"chat": str(FIXTURES / "openai_chat.json"), "garbage": str(tmp_path / "garbage.json"),
             "empty": str(tmp_path / "empty.json"), "bad_rules": str(tmp_path / "bad_rules.py")}
    argv = ["import", *(a.format(**names) for a in args)]
    if "--db-url" not in argv:
        argv += ["--db-url", f"sqlite:///{tmp_path}/x.db"]
    result = runner.invoke(app, argv)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_marks_are_mark_records() -> None:
    found = read("openai_chat.json", "openai")[0]
    marks = [r for r in found if isinstance(r, MarkRecord)]
    assert [(m.kind, m.source, m.process) for m in marks] == [("user_turn", SYNTHETIC_TIME_SOURCE, "import"),
                                                              ("end", SYNTHETIC_TIME_SOURCE, "import")]
