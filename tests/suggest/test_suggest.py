"""`shadow rules suggest`: unmapped errors grouped by shape, proposed codes, and the loop that makes them fall."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import insert
from typer.testing import CliRunner

import shadow
from shadow._ids import new_id
from shadow.calllog import _db as db
from shadow.calllog import _tables as tables
from shadow.cli import ExitCode, app
from shadow.contract._codes import Code
from shadow.suggest import legacy_text, propose_code, shape_of

ROOT = Path(__file__).resolve().parents[2]
TOOL_LAYER = ROOT / "tests" / "fixtures" / "suggest" / "tool_layer.py"


@pytest.mark.parametrize(("text", "code"), [
    # Preconditions in the current state, not malformed arguments.
    ("No changes staged for commit. Use git_add to stage changes first", Code.FAILED_PRECONDITION),
    ("HEAD is detached, so there is no current branch to branch from; pass base_branch", Code.FAILED_PRECONDITION),
    ("On branch main\nnothing to commit, working tree clean", Code.FAILED_PRECONDITION),
    ("error: Your local changes to the following files would be overwritten by checkout:", Code.FAILED_PRECONDITION),
    # "does not exist" about a value that cannot be is not not_found.
    ("Invalid time: 02:30 does not exist in Europe/Berlin on 2027-03-28 (skipped by a clock change)",
     Code.VALIDATION_ERROR),
    ('column "emial" does not exist', Code.VALIDATION_ERROR),
    ('relation "users" does not exist', Code.NOT_FOUND),
    ("Ref 'nope' did not resolve to an object", Code.NOT_FOUND),
    ("No item found with id nope", Code.NOT_FOUND),
    ("fatal: pathspec 'x.txt' did not match any files", Code.NOT_FOUND),
    ("/srv/repo/nosuchdir", Code.NOT_FOUND),
    ("Failed to fetch https://a.example/x: ConnectError('[Errno -2] Name or service not known')",
     Code.UPSTREAM_UNAVAILABLE),
    ("Error: connect ECONNREFUSED 127.0.0.1:5432", Code.UPSTREAM_UNAVAILABLE),
    ("Error: connect ETIMEDOUT 10.0.0.12:443", Code.UPSTREAM_TIMEOUT),
    ("Failed to fetch http://h.example/status/404 - status code 404", Code.NOT_FOUND),
    ("Failed to fetch https://host.invalid/page: ReadTimeout('')", Code.UPSTREAM_TIMEOUT),
    ("Error: canceling statement due to statement timeout", Code.UPSTREAM_TIMEOUT),
    ("Cannot create branch 'feature': refs/heads/feature already exists", Code.ALREADY_EXISTS),
    ("Error: Only SELECT queries are allowed for read_query", Code.UNSUPPORTED_INPUT),
])
def test_the_phrase_table_proposes_the_code_a_careful_reader_would(text: str, code: Code) -> None:
    proposal = propose_code(text)
    assert proposal.code is code, proposal.reason


def test_a_word_in_a_url_or_path_never_decides_the_code() -> None:
    assert propose_code("Error: could not read https://invalid.example/not-found: broken pipe").code is (
        Code.UPSTREAM_UNAVAILABLE)


def test_an_exception_class_name_speaks_when_the_text_does_not() -> None:
    assert propose_code("/srv/x", "git.exc.NoSuchPathError").code is Code.NOT_FOUND
    assert propose_code("board 12 wobbles", "ValueError").code is Code.VALIDATION_ERROR
    assert propose_code("board 12 wobbles", "BoardError").code is None


def test_messages_of_one_shape_share_a_shape_and_the_regex_reads_the_masked_parts() -> None:
    a = shape_of("Cannot create branch 'hotfix': refs/heads/hotfix already exists")
    b = shape_of("Cannot create branch 'docs': refs/heads/docs already exists")
    assert a == b
    assert a.text == "Cannot create branch '<branch>': <path> already exists"
    import re

    found = re.search(a.pattern, "Cannot create branch 'x1': refs/heads/x1 already exists")
    assert found is not None and found.group("branch") == "x1"
    assert re.search(a.pattern, "Something else: Cannot create branch 'x1': refs/heads/x1 already exists") is None
    when = shape_of("Invalid time: 02:30 does not exist in Europe/Berlin on 2027-03-28 (skipped by a clock change)")
    assert when.fields == ("time", "path", "date")
    ids = shape_of("No item found with id 0193a7e2-4b1c-7f00-8000-1234567890ab, status code 404")
    assert ids.text == "No item found with id <id>, status code <status>"


def test_a_credential_in_a_message_is_masked_and_never_becomes_a_context_field() -> None:
    import re

    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    shape = shape_of(f"token {token} rejected for user 'ana'")
    assert token not in shape.text and token not in shape.pattern
    assert shape.text == "token <secret> rejected for user '<user>'" and shape.fields == ("user",)
    found = re.search(shape.pattern, "token ghp_ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210 rejected for user 'bo'")
    assert found is not None and found.groupdict() == {"user": "bo"}


def test_json_keys_curly_quotes_and_windows_paths_are_read_as_such() -> None:
    body = shape_of('{"message":"Bad credentials","status":"401"}')
    assert body.text == '{"message":"<message>","status":"<status>"}'  # the keys stay, the values vary
    assert shape_of("open C:\\Users\\ana\\notes.txt failed").text == "open <path> failed"
    assert shape_of("no field “due date” here").text == "no field “<field>” here"


def test_the_text_of_proxy_adapter_and_string_payloads() -> None:
    proxied = {"content": [{"type": "text", "text": "Error executing tool git_add: Ref 'x' did not resolve"}],
               "isError": True}
    assert legacy_text(proxied) == ("Ref 'x' did not resolve", None)
    assert legacy_text({"exception": "GitCommandError", "message": "boom"}) == ("boom", "GitCommandError")
    assert legacy_text({"ok": False, "error": {"message": "no such user"}}) == ("no such user", None)
    imported = {"content": [{"type": "text", "text": "Database error: no such table: t"}], "is_error": False}
    assert legacy_text(imported) == ("Database error: no such table: t", None)
    assert legacy_text({"content": "Error: boom", "is_error": True}) == ("Error: boom", None)


def _run_traffic(db_url: str, rules: Path | None = None) -> None:
    env = {**os.environ, "SHADOW_FLAGS": "*=shadow", "SHADOW_DB_URL": db_url,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    args = [sys.executable, str(TOOL_LAYER), "300", *([str(rules)] if rules else [])]
    subprocess.run(args, env=env, check=True, timeout=120, cwd=ROOT)


def _unmapped_share(db_url: str, tool: str, since: str | None = None) -> float:
    args = ["ready", tool, "--db-url", db_url, "--min-calls", "10", "--min-errors", "5", "--format", "json"]
    result = CliRunner().invoke(app, [*args, *(["--since", since] if since else [])])
    assert result.exit_code in (0, 1), result.output
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    return float(checks["unmapped_share"]["value"])


def test_shadow_suggest_review_and_shadow_again_makes_the_unmapped_share_fall(db_url: str, tmp_path: Path) -> None:
    _run_traffic(db_url)
    learned = tmp_path / "learned_rules.py"
    result = CliRunner().invoke(app, ["rules", "suggest", "--db-url", db_url, "--emit-rules", str(learned),
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert found["unmapped"] == found["errors"] > 100
    by_tool = {g["tool"]: g for g in found["groups"]}
    assert by_tool["git_checkout"]["code"] == "not_found"
    assert by_tool["git_checkout"]["context_fields"] == ["ref"]
    assert "{ref}" in by_tool["git_checkout"]["message"]
    assert by_tool["git_commit"]["code"] == "failed_precondition"
    assert by_tool["convert_time"]["code"] == "validation_error"
    assert by_tool["fetch"]["code"] == "upstream_unavailable"
    assert by_tool["move_card"]["code"] is None  # nothing in the table: left to the reviewer
    assert sum(g["count"] for g in found["groups"]) == found["unmapped"]
    assert len(found["groups"]) == 6  # one per shape: branch names, hosts, times and ids are masked

    time.sleep(1.1)
    review = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    time.sleep(1.1)
    _run_traffic(db_url, learned)  # the shadow phase again, with the reviewed rules
    for tool in ("git_checkout", "git_commit", "git_create_branch", "convert_time", "fetch"):
        assert _unmapped_share(db_url, tool) == 0.5  # the whole log: half before the rules, half after
        assert _unmapped_share(db_url, tool, since=review) == 0.0
    assert _unmapped_share(db_url, "move_card", since=review) == 1.0
    again = CliRunner().invoke(app, ["rules", "suggest", "--db-url", db_url, "--since", review, "--format", "json"])
    after = json.loads(again.stdout)
    print(f"\nunmapped share before the learned rules {found['unmapped_share']:.1%}, after "
          f"{after['unmapped_share']:.1%}")
    assert after["unmapped_share"] < 0.15 < found["unmapped_share"]
    assert [g["tool"] for g in after["groups"]] == ["move_card"]

    engine = db.engine(db_url)
    with engine.connect() as conn:
        payload = conn.execute(tables.calls.select().where(
            tables.calls.c.tool == "git_checkout", tables.calls.c.outcome == "error",
            tables.calls.c.unmapped.is_(False))).first()
    assert payload is not None
    error = payload.new_payload["error"]
    assert error["code"] == "not_found"
    assert error["context"]["ref"] in error["message"]


def test_the_table_output_names_the_group_the_code_and_the_remedy(db_url: str) -> None:
    url = db_url
    engine = db.engine(url)
    tables.metadata.create_all(engine)
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    rows = [{"id": new_id(), "session_id": "s", "seq": n, "ts": t0 + dt.timedelta(seconds=n), "tool": "git_status",
             "mode": "shadow", "variant": "legacy", "fingerprint": "f", "outcome": "error",
             "legacy_payload": {"content": [{"type": "text", "text": "Error executing tool git_status: Repository "
                                             f"path '/tmp/r{n}' is outside the allowed repository '/srv/repo'"}],
                                "isError": True},
             "code": "internal_error", "unmapped": True, "latency_us": 1, "process": "p", "host": "h"}
            for n in range(4)]
    with engine.begin() as conn:
        conn.execute(insert(tables.calls), rows)
    result = CliRunner().invoke(app, ["rules", "suggest", "--db-url", url, "--tool", "git_status"])
    assert result.exit_code == 0, result.output
    assert "4 of 4 errors unmapped (100.0%)" in result.stdout
    assert "git_status: 4 (100.0%) -> permission_denied" in result.stdout
    assert "shape:   Repository path '<path>' is outside the allowed repository '<repository>'" in result.stdout
    later = CliRunner().invoke(app, ["rules", "suggest", "--db-url", url, "--since", "2026-01-01T00:00:02"])
    assert "2 of 2 errors unmapped" in later.stdout


def test_a_missing_log_or_a_bad_file_name_says_what_to_do(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["rules", "suggest", "--db-url", f"sqlite:///{tmp_path / 'none.db'}"])
    assert result.exit_code == ExitCode.USAGE
    assert "no call log" in result.output
    result = CliRunner().invoke(app, ["rules", "suggest", "--emit-rules", str(tmp_path / "rules.txt")])
    assert result.exit_code == ExitCode.USAGE
    assert "learned_rules.py" in result.output


def test_the_proposals_agree_with_a_careful_reviewer_on_the_error_corpus() -> None:
    corpus = json.loads((ROOT / "tests" / "fixtures" / "error_corpus.json").read_text())["entries"]
    agree = [e for e in corpus if propose_code(legacy_text(e["text"])[0]).code == e["code"]]
    print(f"\nrules suggest proposals agree on {len(agree)}/{len(corpus)} corpus texts")
    assert len(agree) == len(corpus)


def test_sqlalchemy_errors_of_one_template_are_one_shape_whatever_statement_they_ran() -> None:
    """LangChain's SQL tools return SQLAlchemy's text: the statement, its parameters and a docs link follow."""
    texts = [f"(sqlite3.OperationalError) incomplete input\n[SQL: {sql}]\n[parameters: [{{}}]]\n"
             "(Background on this error at: https://sqlalche.me/e/21/e3q8)"
             for sql in ("SELECT * FROM customers WHERE", "SELECT count(*) FROM orders GROUP BY")]
    shapes = {shape_of(text).text for text in texts}
    assert shapes == {"(<id>.OperationalError) incomplete input"}
    for text in texts:
        assert re.search(shape_of(text).pattern, text)


def test_an_emitted_rule_keeps_the_phrases_own_next_action() -> None:
    """A raised exception read as a denial of where a path points is served ask_user; the drafted rule must be too,
    not the code's default stop."""
    from shadow.suggest import Suggestions, Unmapped, emit_rules, group

    errors = [Unmapped("read_file", f"Path '/etc/{name}' is outside the allowed directories", "PermissionError")
              for name in ("passwd", "hosts", "shadow")]
    groups = group(errors)
    assert [(g.code, g.action) for g in groups] == [(Code.PERMISSION_DENIED, shadow.NextAction.ASK_USER)]
    source = emit_rules(Suggestions(tuple(groups), 3, 3, 3, None, None), "test")
    assert "next_action='ask_user'" in source or 'next_action="ask_user"' in source
    namespace: dict[str, object] = {}
    exec(compile(source, "learned_rules.py", "exec"), namespace)  # the module suggest wrote
    rules = namespace["RULES"]
    assert isinstance(rules, shadow.Rules)
    found = rules.translate_exception(PermissionError("Path '/etc/group' is outside the allowed directories"))
    assert (found.error.code, found.error.next_action.value) == (Code.PERMISSION_DENIED, "ask_user")
    assert found.rule is not None and found.rule.startswith("suggest:")


def test_a_json_error_object_returned_as_text_is_shaped_by_its_message() -> None:
    """math-mcp returns '{"error": "..."}' as a text block: every such error was one shape, {"error":"<value>"}."""
    for payload in ('{"error": "Unsupported distribution: zipf"}',
                    {"content": [{"type": "text", "text": '{"error": "Unsupported distribution: zipf"}'}],
                     "isError": False},
                    'Error executing tool sample: {"error": "Unsupported distribution: zipf"}'):
        text, _ = legacy_text(payload)
        assert shape_of(text).text == "Unsupported distribution: <distribution>"
    assert legacy_text('{"result": 3}')[0] == '{"result": 3}'
