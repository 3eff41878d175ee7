"""``shadow eval``: examples, the classifier's rules, the client against a loopback fake model, record and replay."""

from __future__ import annotations

import datetime as dt
import email.utils
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert
from typer.testing import CliRunner

from shadow._ids import new_id
from shadow.calllog import _db as db
from shadow.calllog._tables import calls, metadata
from shadow.cli import app
from shadow.contract._codes import CODE_TABLE, Code, NextAction
from shadow.contract._describe import describe
from shadow.contract._schema import validate
from shadow.eval._classify import classify_text
from shadow.eval._examples import sample_value, user_tool
from shadow.eval._run import (
    Action,
    Endpoint,
    EndpointError,
    EvalInputError,
    Exchange,
    HttpChatClient,
    StoreError,
    agrees,
    ask,
    build_examples,
    classify,
    evaluate,
    legacy_payloads,
    load,
    load_user_module,
    render_table,
    save,
)
from shadow.normalize._http import retry_after_ms

FIXTURES = Path(__file__).parents[1] / "fixtures" / "eval"
REPLIES = FIXTURES / "replies"
SCRIPT = json.loads((FIXTURES / "script.json").read_text())
PARAGRAPH_MARK = "Error codes (default next_action in brackets)"
ARGS = {"title": "Ship the release notes", "due_date": "next friday"}


# ---------------------------------------------------------------- no real network, ever


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.create_connection

    def guarded(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        if address[0] not in ("127.0.0.1", "localhost", "::1"):
            raise AssertionError(f"test tried a real network call to {address!r}")
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", guarded)


# ---------------------------------------------------------------- the fake OpenAI-compatible server


def recorded_reply(kind: str, request: dict[str, Any]) -> str:
    """The recorded reply ``kind``, with its call placeholders bound to the call the request's turn made."""
    if kind == "not_json":
        return (REPLIES / "not_json.txt").read_text()
    call = next(m for m in request["messages"] if m["role"] == "assistant")["tool_calls"][0]["function"]
    args = json.loads(call["arguments"])
    first = next(iter(args))
    changed = {**args, first: f"{args[first]} (corrected)" if isinstance(args[first], str) else "corrected"}
    values = {
        "{{tool}}": call["name"],
        "{{arguments}}": call["arguments"],
        "{{arguments_reordered}}": json.dumps(dict(reversed(list(args.items()))), indent=1),
        "{{arguments_changed}}": json.dumps(changed),
    }

    def bind(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: bind(v) for k, v in node.items()}
        if isinstance(node, list):
            return [bind(v) for v in node]
        return values.get(node, node) if isinstance(node, str) else node

    return json.dumps(bind(json.loads((REPLIES / f"{kind}.json").read_text())))


class FakeModel:
    """A loopback chat completions server answering from the recorded replies, per ``script.json``."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.faults: list[tuple[int, dict[str, str], str]] = []  # served first, one per request
        self.delay = 0.0
        self.lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with model.lock:
                    model.requests.append(body)
                    model.headers.append(dict(self.headers))
                    fault = model.faults.pop(0) if model.faults else None
                if model.delay:
                    time.sleep(model.delay)
                if self.path != "/v1/chat/completions":
                    fault = (404, {}, '{"error": {"message": "Unknown path"}}')
                if fault is not None:
                    status, headers, text = fault
                else:
                    status, headers, text = 200, {}, recorded_reply(model.kind_for(body), body)
                data = text.encode()
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)

    @staticmethod
    def kind_for(body: dict[str, Any]) -> str:
        arm = "structured" if PARAGRAPH_MARK in body["tools"][0]["function"]["description"] else "legacy"
        call_id = body["messages"][-1]["tool_call_id"]  # call_<code>_<nn>
        code, index = call_id[len("call_"):].rsplit("_", 1)
        script = SCRIPT[arm]
        return str(script.get(code, script.get("*"))[int(index) - 1])


@pytest.fixture
def fake_model() -> Iterator[FakeModel]:
    model = FakeModel()
    model.thread.start()
    try:
        yield model
    finally:
        model.server.shutdown()
        model.server.server_close()
        model.thread.join(5)


def client_for(model: FakeModel, **kw: Any) -> tuple[HttpChatClient, list[float]]:
    slept: list[float] = []
    endpoint = Endpoint(model.url, kw.pop("api_key", None), **{"backoff": 0.5, **kw})
    return HttpChatClient(endpoint, sleep=slept.append), slept


def body_of(kind: str, tool: str = "create_task", args: dict[str, Any] | None = None) -> str:
    arguments = json.dumps(args if args is not None else ARGS)
    request = {"messages": [{"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": tool, "arguments": arguments}}]}]}
    return recorded_reply(kind, request)


# ---------------------------------------------------------------- examples


def test_builds_ten_contract_valid_examples_per_code_with_the_table_defaults() -> None:
    examples = build_examples()
    assert len(examples) == len(Code) * 10
    for code, row in CODE_TABLE.items():
        mine = [e for e in examples if e.code is code]
        assert [e.index for e in mine] == list(range(1, 11))
        assert {e.expected for e in mine} == {row.next_action}
        for e in mine:
            validate(e.payload())
        assert len({e.error.message for e in mine}) == 10, f"{code} repeats a message"
        assert len({json.dumps(e.error.context, sort_keys=True) for e in mine}) >= 8, f"{code} contexts barely vary"
        assert len({e.tool.name for e in mine}) >= 5, f"{code} uses too few tools"


def test_each_turn_is_system_user_tool_call_and_the_error_payload_with_the_codes_paragraph() -> None:
    example = next(e for e in build_examples(codes=["not_found"]) if e.index == 1)
    body = example.request_body("some-model")
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]
    call = body["messages"][2]["tool_calls"][0]
    assert call["function"]["name"] == example.tool.name == body["tools"][0]["function"]["name"]
    assert json.loads(call["function"]["arguments"]) == dict(example.arguments)
    assert body["messages"][3]["tool_call_id"] == call["id"] == "call_not_found_01"
    assert json.loads(body["messages"][3]["content"]) == example.payload()
    description = body["tools"][0]["function"]["description"]
    assert description.startswith(example.tool.description) and description.endswith(describe())
    assert body["model"] == "some-model"


def test_a_legacy_turn_carries_the_legacy_payload_and_the_plain_description() -> None:
    example = build_examples(codes=["not_found"])[0]
    as_text = example.request_body("m", legacy_payload="Error: order not found")
    as_dict = example.request_body("m", legacy_payload={"error": "Bad request", "status": 404})
    assert as_text["messages"][3]["content"] == "Error: order not found"
    assert json.loads(as_dict["messages"][3]["content"]) == {"error": "Bad request", "status": 404}
    assert as_text["tools"][0]["function"]["description"] == example.tool.description
    assert as_text["messages"][:3] == example.request_body("m")["messages"][:3]


def write_module(tmp_path: Path, text: str) -> str:
    path = tmp_path / "my_rules.py"
    path.write_text(text)
    return str(path)


def test_the_users_own_rule_messages_replace_built_in_ones_and_stay_contract_valid(tmp_path: Path) -> None:
    ref = write_module(tmp_path, (
        "import shadow\n"
        "RULES = shadow.Rules.default().on(KeyError, 'not_found',\n"
        "    'No task has the id {task_id}. List the tasks first, for example with list_tasks.',\n"
        "    context=lambda e: {'task_id': e.args[0]})\n"
        "RULES = RULES.on(LookupError, 'not_found', 'That project does not exist. Check its key, for example OPS.')\n"
        "RULES = RULES.on(ValueError, 'validation_error', lambda e: str(e))\n"  # callable: not usable
        "RULES = RULES.on(OSError, 'conflict', 'One. Two. Three sentences break the message rule.')\n"
    ))
    user = load_user_module(ref)
    examples = build_examples(user.rules)
    not_found = [e for e in examples if e.code is Code.NOT_FOUND]
    assert not_found[0].error.message == "That project does not exist. Check its key, for example OPS."
    assert not_found[1].error.message == "No task has the id task id. List the tasks first, for example with list_tasks."
    assert not_found[1].error.context == {"task_id": "task id"}
    assert [e.source for e in not_found[:3]] == ["rules", "rules", "built-in"]
    assert all(e.source == "built-in" for e in examples if e.code in (Code.VALIDATION_ERROR, Code.CONFLICT))
    builtin = {e.id: e for e in build_examples()}
    assert not_found[2].error == builtin["not_found-03"].error
    for e in examples:
        validate(e.payload())


def test_the_users_tools_are_used_for_the_codes_they_declare(tmp_path: Path) -> None:
    ref = write_module(tmp_path, (
        "TOOLS = [\n"
        " {'type': 'function', 'function': {'name': 'create_ticket', 'description': 'Open a support ticket.',\n"
        "  'parameters': {'type': 'object', 'properties': {'subject': {'type': 'string'},\n"
        "   'priority': {'enum': ['p1', 'p2']}, 'due': {'type': 'string', 'format': 'date'}},\n"
        "   'required': ['subject', 'priority', 'due']}},\n"
        "  'request': 'Open a P1 ticket about the outage.', 'codes': ['validation_error', 'rate_limited']},\n"
        " {'name': 'get_ticket', 'description': 'Read a ticket.', 'arguments': {'ticket_id': 'T-9'}},\n"
        "]\n"
    ))
    user = load_user_module(ref)
    assert user.rules is None
    examples = build_examples(None, user.tools)
    validation = [e for e in examples if e.code is Code.VALIDATION_ERROR]
    assert {e.tool.name for e in validation} == {"create_ticket", "get_ticket"}
    ticket = next(e for e in validation if e.tool.name == "create_ticket")
    assert dict(ticket.arguments) == {"subject": "example", "priority": "p1", "due": "2025-03-14"}
    assert ticket.request == "Open a P1 ticket about the outage."
    not_found = [e for e in examples if e.code is Code.NOT_FOUND]
    assert {e.tool.name for e in not_found} == {"get_ticket"}
    assert dict(not_found[0].arguments) == {"ticket_id": "T-9"} and not_found[0].source == "tools"


@pytest.mark.parametrize(("text", "complaint"), [
    ("X = 1\n", "neither RULES nor TOOLS"),
    ("RULES = 'not rules'\n", "must be a shadow.Rules"),
    ("TOOLS = {'name': 'x'}\n", "must be a list"),
    ("TOOLS = [{'description': 'no name'}]\n", "needs a 'name'"),
    ("TOOLS = [{'name': 'x', 'codes': ['bogus']}]\n", "documented codes"),
    ("raise RuntimeError('boom')\n", "importing"),
    ("TOOLS = [{'name': 'x', 'arguments': {'when': object()}}]\n", "plain JSON data"),
])
def test_a_bad_rules_module_gets_a_clear_error(tmp_path: Path, text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        load_user_module(write_module(tmp_path, text))


def test_a_rules_file_may_import_its_siblings_and_a_dotted_name_is_found_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "shared_messages.py").write_text("NOT_FOUND = 'No order has that id. Check it, for example A-1.'\n")
    (tmp_path / "team_rules.py").write_text(
        "import shadow, shared_messages\n"
        "RULES = shadow.Rules().on(KeyError, 'not_found', shared_messages.NOT_FOUND)\n"
    )
    by_file = load_user_module(str(tmp_path / "team_rules.py"))
    assert by_file.rules is not None and len(by_file.rules) == 1
    assert str(tmp_path) not in sys.path
    monkeypatch.chdir(tmp_path)
    by_name = load_user_module("team_rules")
    assert build_examples(by_name.rules, codes=["not_found"])[0].error.message.startswith("No order has that id.")


def test_a_missing_rules_module_says_what_to_pass() -> None:
    with pytest.raises(ValueError, match="dotted module name"):
        load_user_module("no_such_module_for_shadow_eval")
    with pytest.raises(ValueError, match="no file"):
        load_user_module("missing/rules.py")


def test_sample_arguments_follow_the_schema() -> None:
    schema = {"type": "object", "required": ["n", "tags", "flag"], "properties": {
        "n": {"type": "integer", "minimum": 3}, "tags": {"type": "array", "items": {"type": "string"}},
        "flag": {"type": ["null", "boolean"]}, "optional": {"type": "string"}}}
    assert sample_value(schema) == {"n": 3, "tags": ["example"], "flag": True}
    assert user_tool({"name": "t", "parameters": {"type": "object", "properties": {"a": {"default": 7}}}}).arguments \
        == {"a": 7}


# ---------------------------------------------------------------- the classifier's rules, one reply kind each


@pytest.mark.parametrize(("kind", "action", "reason"), [
    ("identical_call", Action.RETRY, "identical call"),
    ("identical_call_reordered", Action.RETRY, "identical call"),
    ("legacy_function_call", Action.RETRY, "identical call"),
    ("parallel_calls_one_identical", Action.RETRY, "identical call"),
    ("changed_call", Action.CHANGED_CALL, "changed arguments"),
    ("other_tool_call", Action.CHANGED_CALL, "another tool"),
    ("ask_question", Action.ASK_USER, "question"),
    ("ask_request", Action.ASK_USER, "information or a decision"),
    ("content_parts", Action.ASK_USER, "question"),
    ("report_failure", Action.STOP, "without asking"),
    ("report_with_closing", Action.STOP, "without asking"),
    ("done_with_closing", Action.STOP, "without asking"),
    ("refusal", Action.UNCLEAR, "refused"),
    ("text_refusal", Action.UNCLEAR, "refused"),
    ("content_filter", Action.UNCLEAR, "content_filter"),
    ("empty", Action.UNCLEAR, "empty"),
    ("bad_arguments", Action.UNCLEAR, "not a JSON object"),
    ("not_json", Action.UNCLEAR, "not JSON"),
    ("no_choices", Action.UNCLEAR, "no choices"),
    ("empty_choices", Action.UNCLEAR, "no choices"),
    ("error_object", Action.UNCLEAR, "error object"),
])
def test_each_recorded_reply_kind_is_classified_by_its_rule(kind: str, action: Action, reason: str) -> None:
    verdict = classify(body_of(kind), "create_task", ARGS)
    assert verdict.action is action
    assert reason in verdict.reason


@pytest.mark.parametrize("body", [
    "", "null", "[1, 2]", '{"choices": "nope"}', '{"choices": [42]}', '{"choices": [{"message": "hi"}]}',
    '{"choices": [{"message": {"tool_calls": [{"function": {"arguments": "{}"}}]}}]}',
    '{"choices": [{"message": {"tool_calls": [{"function": {"name": "create_task", "arguments": "[1]"}}]}}]}',
    "[" * 100_000,
])
def test_malformed_bodies_are_unclear_and_never_raise(body: str) -> None:
    assert classify(body, "create_task", ARGS).action is Action.UNCLEAR


def test_a_call_with_one_argument_changed_is_a_changed_call_not_a_retry() -> None:
    changed = body_of("identical_call", args={**ARGS, "due_date": "2025-03-14"})
    assert classify(changed, "create_task", ARGS).action is Action.CHANGED_CALL
    same_values_other_tool = body_of("identical_call", tool="create_todo")
    assert classify(same_values_other_tool, "create_task", ARGS).action is Action.CHANGED_CALL


@pytest.mark.parametrize(("text", "action"), [
    ("Which date should I use for the due date?", Action.ASK_USER),
    ("I need your work email address to create the account.", Action.ASK_USER),
    ("Let me know which room you prefer.", Action.ASK_USER),
    ("Could you sign in again so I can continue.", Action.ASK_USER),
    ("Please confirm the amount, for example 1250.00.", Action.ASK_USER),
    ("Would you like me to book 11:00 instead? Let me know if you need anything else.", Action.ASK_USER),
    ("You don't have permission to deploy to production. Ask a release manager to run it.", Action.STOP),
    ("The quota is used up, so I stopped. Is there anything else I can help with?", Action.STOP),
    ("The task already exists as T-5120; nothing more to do.", Action.STOP),
    ("The query was cancelled, so I stopped; it was `SELECT * FROM t WHERE id = ?`", Action.STOP),
    ("I cannot assist with this request.", Action.UNCLEAR),
    ("   ", Action.UNCLEAR),
])
def test_text_replies_split_into_asking_the_user_and_stopping(text: str, action: Action) -> None:
    assert classify_text(text).action is action


def test_agreement_ask_user_accepts_a_changed_call_but_retry_and_stop_do_not() -> None:
    assert agrees(NextAction.ASK_USER, Action.CHANGED_CALL) and agrees(NextAction.ASK_USER, Action.ASK_USER)
    assert agrees(NextAction.RETRY, Action.RETRY) and not agrees(NextAction.RETRY, Action.CHANGED_CALL)
    assert agrees(NextAction.STOP, Action.STOP) and not agrees(NextAction.STOP, Action.CHANGED_CALL)
    assert not any(agrees(n, Action.UNCLEAR) for n in NextAction)
    assert not agrees(NextAction.STOP, Action.ASK_USER) and not agrees(NextAction.ASK_USER, Action.RETRY)


# ---------------------------------------------------------------- the client


def test_the_client_retries_5xx_with_backoff_then_succeeds(fake_model: FakeModel) -> None:
    fake_model.faults = [(503, {}, "busy"), (502, {}, "<html>bad gateway</html>")]
    client, slept = client_for(fake_model)
    example = build_examples(codes=["rate_limited"])[0]
    reply = client.complete(example.request_body("m"))
    assert reply.status == 200 and classify(reply.body, example.tool.name, example.arguments).action is Action.RETRY
    assert len(fake_model.requests) == 3
    assert slept == [0.5, 1.0]


def test_the_client_honours_retry_after_on_429_up_to_its_cap(fake_model: FakeModel) -> None:
    fake_model.faults = [(429, {"Retry-After": "7"}, "{}"), (429, {"Retry-After": "3600"}, "{}")]
    client, slept = client_for(fake_model, max_wait=30.0)
    client.complete(build_examples(codes=["rate_limited"])[0].request_body("m"))
    assert slept == [7.0, 30.0]


def test_the_client_reads_retry_after_with_normalizes_parser_http_dates_and_ms_included(
    fake_model: FakeModel,
) -> None:
    later = email.utils.format_datetime(dt.datetime.now(dt.UTC) + dt.timedelta(seconds=20), usegmt=True)
    fake_model.faults = [(429, {"Retry-After": later}, "{}"), (429, {"retry-after-ms": "1500"}, "{}"),
                         (503, {"Retry-After": "soon"}, "{}")]
    client, slept = client_for(fake_model, max_wait=30.0, attempts=4)
    client.complete(build_examples(codes=["rate_limited"])[0].request_body("m"))
    assert 17.0 <= slept[0] <= 20.0 and slept[1] == 1.5
    assert slept[2] == 2.0  # unreadable: the exponential backoff (0.5 * 2**2)


def test_only_normalize_parses_retry_after() -> None:
    import shadow.eval._client as client_module

    assert client_module.retry_after_ms is retry_after_ms
    assert not hasattr(client_module, "retry_after")


def test_the_client_gives_up_after_bounded_attempts_with_a_clear_error(fake_model: FakeModel) -> None:
    fake_model.faults = [(500, {}, '{"error": {"message": "The server had an error"}}')] * 10
    client, slept = client_for(fake_model, attempts=3)
    with pytest.raises(EndpointError, match=r"failed 3 times, last with HTTP 500 \(The server had an error\)") as info:
        client.complete({"model": "m", "messages": []})
    assert info.value.unavailable and len(fake_model.requests) == 3 and len(slept) == 2


@pytest.mark.parametrize(("status", "text", "complaint"), [
    (401, '{"error": {"message": "Incorrect API key provided: sk-abc***xyz"}}', r"\$MY_KEY"),
    (404, '{"error": {"message": "The model nope does not exist"}}', "check --base-url"),
    (400, '{"error": {"message": "Unsupported parameter: temperature"}}', "Unsupported parameter: temperature"),
])
def test_client_errors_are_not_retried_and_say_what_to_fix(
    fake_model: FakeModel, status: int, text: str, complaint: str
) -> None:
    fake_model.faults = [(status, {}, text)]
    client, slept = client_for(fake_model, api_key="sk-live-secret-value-123", api_key_env="MY_KEY")
    with pytest.raises(EndpointError, match=complaint) as info:
        client.complete({"model": "m", "messages": []})
    assert info.value.status == status and not info.value.unavailable and slept == []
    assert "sk-live-secret-value-123" not in str(info.value)


def test_the_key_goes_only_in_the_authorization_header(fake_model: FakeModel) -> None:
    with_key, _ = client_for(fake_model, api_key="sk-test-123")
    without, _ = client_for(fake_model)
    body = build_examples(codes=["cancelled"])[0].request_body("m")
    with_key.complete(body)
    without.complete(body)
    assert fake_model.headers[0]["Authorization"] == "Bearer sk-test-123"
    assert "Authorization" not in fake_model.headers[1]
    assert "sk-test-123" not in json.dumps(fake_model.requests)


def test_an_unreachable_endpoint_and_a_timeout_fail_clearly(fake_model: FakeModel) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    refused = HttpChatClient(Endpoint(f"http://127.0.0.1:{closed_port}/v1", attempts=2), sleep=lambda _s: None)
    with pytest.raises(EndpointError, match="failed 2 times") as info:
        refused.complete({"model": "m"})
    assert info.value.unavailable
    fake_model.delay = 0.6
    slow, _ = client_for(fake_model, timeout=0.2, attempts=1)
    with pytest.raises(EndpointError, match="a timeout"):
        slow.complete({"model": "m"})


@pytest.mark.parametrize("url", ["api.openai.com/v1", "ftp://example.com", "http://"])
def test_a_base_url_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="not an http"):
        Endpoint(url)


def test_the_endpoint_url_accepts_the_api_root_or_the_full_path() -> None:
    assert Endpoint("https://api.example.com/v1/").url == "https://api.example.com/v1/chat/completions"
    assert Endpoint("http://h:8000/v1/chat/completions").url == "http://h:8000/v1/chat/completions"


# ---------------------------------------------------------------- live runs, reports, record and replay


EXPECTED_STRUCTURED = dict.fromkeys(CODE_TABLE, 1.0) | {
    Code.CONFLICT: 0.7, Code.UNAUTHENTICATED: 0.7, Code.PERMISSION_DENIED: 0.9,
    Code.UPSTREAM_UNAVAILABLE: 0.9, Code.INTERNAL_ERROR: 0.9,
}


def test_a_live_run_reports_agreement_confusion_and_ambiguous_codes(fake_model: FakeModel) -> None:
    client, _ = client_for(fake_model)
    done: list[Exchange] = []
    exchanges = ask(build_examples(), client, "fake-1", concurrency=4, on_done=done.append)
    assert len(exchanges) == len(done) == len(fake_model.requests) == 170
    report = evaluate(exchanges, threshold=0.9)
    structured = report.arm("structured")
    assert structured is not None and report.arm("legacy") is None
    assert {r.code: r.agreement for r in structured.rows} == EXPECTED_STRUCTURED
    assert report.ambiguous == (Code.CONFLICT, Code.UNAUTHENTICATED)
    conflict = next(r for r in structured.rows if r.code is Code.CONFLICT)
    assert dict(conflict.confusion) == {Action.RETRY: 3, Action.CHANGED_CALL: 2, Action.ASK_USER: 5,
                                        Action.STOP: 0, Action.UNCLEAR: 0}
    auth = next(r for r in structured.rows if r.code is Code.UNAUTHENTICATED)
    assert auth.confusion[Action.UNCLEAR] == 3
    assert structured.agreeing == 161 and report.model == "fake-1"
    table = render_table(report)
    assert "conflict" in table and "AMBIGUOUS" in table and "ambiguous (below 90%): conflict, unauthenticated" in table
    assert evaluate(exchanges, threshold=0.6).ambiguous == ()


def test_replay_equals_live_on_the_same_exchanges(fake_model: FakeModel, tmp_path: Path) -> None:
    client, _ = client_for(fake_model)
    exchanges = ask(build_examples(), client, "fake-1", legacy={Code.NOT_FOUND: ["Error: not found"]})
    written = save(exchanges, tmp_path / "rec")
    assert len(written) == 180
    assert (tmp_path / "rec" / "structured-validation_error-01.json").exists()
    assert (tmp_path / "rec" / "legacy-not_found-10.json").exists()
    assert (tmp_path / "rec" / "structured-unauthenticated-04.json").read_text().count('"text"') == 1  # not JSON
    live = evaluate(exchanges, source="x").to_json()
    replayed = load(tmp_path / "rec")
    assert replayed == exchanges
    assert evaluate(replayed, source="x").to_json() == live


def test_recording_again_replaces_the_old_exchanges_and_leaves_other_files(fake_model: FakeModel,
                                                                          tmp_path: Path) -> None:
    client, _ = client_for(fake_model)
    target = tmp_path / "rec"
    save(ask(build_examples(), client, "m", legacy={Code.NOT_FOUND: ["Error"]}), target)
    (target / "NOTES.md").write_text("reviewed")
    save(ask(build_examples(codes=["cancelled"]), client, "m"), target)
    assert sorted(p.name for p in target.iterdir())[:2] == ["NOTES.md", "structured-cancelled-01.json"]
    assert len(load(target)) == 10


def test_a_committed_recording_replays_to_the_same_judgements() -> None:
    report = evaluate(load(FIXTURES / "recording"), source="replay")
    got = {(j.arm, j.example_id): j.action for a in report.arms for j in a.judgements}
    assert got == {
        ("structured", "conflict-02"): Action.RETRY,
        ("structured", "unauthenticated-04"): Action.UNCLEAR,
        ("structured", "validation_error-02"): Action.CHANGED_CALL,
        ("legacy", "conflict-02"): Action.RETRY,
    }
    assert report.model == "gpt-4o-mini" and report.ambiguous == (Code.CONFLICT, Code.UNAUTHENTICATED)


def test_replay_of_a_broken_or_empty_recording_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(EvalInputError, match="no such directory"):
        load(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(EvalInputError, match="no recorded exchanges"):
        load(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "structured-not_found-01.json").write_text("{")
    with pytest.raises(EvalInputError, match="cannot be read as JSON"):
        load(tmp_path / "bad")
    (tmp_path / "bad" / "structured-not_found-01.json").write_text('{"format": "shadow-eval-exchange/1"}')
    with pytest.raises(EvalInputError, match="not a readable exchange"):
        load(tmp_path / "bad")


def test_an_endpoint_error_stops_the_run(fake_model: FakeModel) -> None:
    fake_model.faults = [(401, {}, "{}")] * 200
    client, _ = client_for(fake_model)
    with pytest.raises(EndpointError, match="HTTP 401"):
        ask(build_examples(), client, "m", concurrency=2)
    assert len(fake_model.requests) < 160


# ---------------------------------------------------------------- legacy payloads from the shadow log


def seed_log(url: str) -> None:
    engine = db.create(url)
    metadata.create_all(engine)
    base = dt.datetime(2025, 3, 1, tzinfo=dt.UTC)
    rows = []
    payloads = [("not_found", "Error: no such order"), ("not_found", {"error": "Not Found", "status": 404}),
                ("not_found", "Error: no such order"), ("rate_limited", {"error": "Too Many Requests"}),
                ("rate_limited", None), ("conflict", "Error: version mismatch")]
    for n, (code, payload) in enumerate(payloads):
        rows.append({
            "id": new_id(), "session_id": "s1", "seq": n, "ts": base + dt.timedelta(seconds=n), "tool": "get_order",
            "mode": "shadow", "variant": "legacy", "fingerprint": "f" * 32, "outcome": "error",
            "legacy_payload": payload, "code": code, "latency_us": 10, "process": "p", "host": "h",
        })
    rows.append({**rows[0], "id": new_id(), "outcome": "ok", "code": None, "legacy_payload": {"rows": 3}})
    with engine.begin() as conn:
        conn.execute(insert(calls), rows)
    engine.dispose()


def test_legacy_payloads_are_the_distinct_logged_ones_per_code_newest_first(db_url: str) -> None:
    seed_log(db_url)
    found = legacy_payloads(db_url, [Code.NOT_FOUND, Code.RATE_LIMITED, Code.CANCELLED])
    assert found == {
        Code.NOT_FOUND: ["Error: no such order", {"error": "Not Found", "status": 404}],
        Code.RATE_LIMITED: [{"error": "Too Many Requests"}],
        Code.CANCELLED: [],
    }


def test_legacy_payloads_from_a_missing_store_say_what_to_do(tmp_path: Path, sqlite_url: str) -> None:
    with pytest.raises(StoreError, match="no shadow log at"):
        legacy_payloads(f"sqlite:///{tmp_path}/nothing.db", [Code.NOT_FOUND])
    db.create(sqlite_url).dispose()
    (tmp_path / "shadow.db").touch()
    with pytest.raises(StoreError, match="holds no call log"):
        legacy_payloads(sqlite_url, [Code.NOT_FOUND])


# ---------------------------------------------------------------- the command line


runner = CliRunner()


def test_eval_sends_nothing_without_base_url_and_model(fake_model: FakeModel) -> None:
    for args in (["eval"], ["eval", "--base-url", fake_model.url], ["eval", "--model", "m"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2
        assert "--base-url" in result.stderr or "--model" in result.stderr
    assert "--model NAME" in runner.invoke(app, ["eval", "--base-url", fake_model.url]).stderr
    assert fake_model.requests == []


def test_eval_exits_1_when_a_code_is_ambiguous_and_0_when_none_is(fake_model: FakeModel,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHADOW_EVAL_KEY", "sk-cli-secret-1")
    base = ["eval", "--base-url", fake_model.url, "--model", "fake-1", "--api-key-env", "SHADOW_EVAL_KEY"]
    failed = runner.invoke(app, [*base, "--concurrency", "4"])
    assert failed.exit_code == 1, failed.stderr
    assert "AMBIGUOUS" in failed.stdout and "ambiguous (below 90%): conflict, unauthenticated" in failed.stdout
    passed = runner.invoke(app, [*base, "--threshold", "0.7", "--format", "json"])
    assert passed.exit_code == 0, passed.stderr
    data = json.loads(passed.stdout)
    assert data["ambiguous"] == [] and data["threshold"] == 0.7 and data["model"] == "fake-1"
    assert data["arms"]["structured"]["agreeing"] == 161
    assert fake_model.headers[-1]["Authorization"] == "Bearer sk-cli-secret-1"


def test_eval_record_then_replay_gives_the_same_report_without_a_network(
    fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-recorded-42")
    rec = tmp_path / "evals"
    live = runner.invoke(app, ["eval", "--base-url", fake_model.url, "--model", "fake-1", "--record", str(rec),
                               "--format", "json"])
    assert live.exit_code == 1, live.stderr
    assert not any("sk-never-recorded-42" in p.read_text() for p in rec.iterdir())
    fake_model.server.shutdown()

    def no_network(*_a: Any, **_k: Any) -> None:
        raise AssertionError("replay touched the network")

    monkeypatch.setattr(socket, "create_connection", no_network)
    replayed = runner.invoke(app, ["eval", "--replay", str(rec), "--format", "json"])
    assert replayed.exit_code == 1, replayed.stderr
    live_data, replay_data = json.loads(live.stdout), json.loads(replayed.stdout)
    assert live_data.pop("source") == "live" and replay_data.pop("source") == "replay"
    assert replay_data == live_data


@pytest.mark.parametrize("extra", [["--record", "x"], ["--model", "m"], ["--legacy-from-store"], ["--rules", "m"]])
def test_eval_replay_refuses_options_that_would_send_or_build(tmp_path: Path, extra: list[str]) -> None:
    result = runner.invoke(app, ["eval", "--replay", str(tmp_path), *extra])
    assert result.exit_code == 2 and "sends nothing" in result.stderr


def test_eval_with_a_bad_rules_module_or_url_is_a_usage_error(fake_model: FakeModel, tmp_path: Path) -> None:
    bad = runner.invoke(app, ["eval", "--base-url", fake_model.url, "--model", "m", "--rules", "nope_nothing"])
    assert bad.exit_code == 2 and "cannot import nope_nothing" in bad.stderr
    url = runner.invoke(app, ["eval", "--base-url", "localhost:8000", "--model", "m"])
    assert url.exit_code == 2 and "not an http(s) URL" in url.stderr
    lone_db = runner.invoke(app, ["eval", "--base-url", fake_model.url, "--model", "m", "--db-url", "sqlite://"])
    assert lone_db.exit_code == 2 and "--legacy-from-store" in lone_db.stderr
    assert fake_model.requests == []


def test_eval_legacy_from_store_reports_both_arms_side_by_side(fake_model: FakeModel, sqlite_url: str) -> None:
    seed_log(sqlite_url)
    result = runner.invoke(app, ["eval", "--base-url", fake_model.url, "--model", "fake-1", "--legacy-from-store",
                                 "--db-url", sqlite_url, "--format", "json"])
    assert result.exit_code == 1, result.stderr
    legacy = json.loads(result.stdout)["arms"]["legacy"]
    assert legacy["examples"] == 30  # not_found, rate_limited and conflict have logged payloads
    by_code = {c["code"]: c for c in legacy["codes"]}
    assert by_code["rate_limited"]["agreement"] == 0.6 and by_code["not_found"]["agreement"] == 0.2
    assert by_code["cancelled"]["examples"] == 0 and by_code["cancelled"]["agreement"] is None
    comparison = json.loads(result.stdout)["comparison"]
    assert comparison["codes"] == ["not_found", "conflict", "rate_limited"] and comparison["examples"] == 30
    assert comparison["structured_agreement"] == 0.9 and comparison["legacy_agreement"] == 1 / 3
    legacy_requests = [r for r in fake_model.requests
                       if PARAGRAPH_MARK not in r["tools"][0]["function"]["description"]]
    assert len(legacy_requests) == 30
    contents = {r["messages"][-1]["content"] for r in legacy_requests if "not_found" in r["messages"][-1]["tool_call_id"]}
    assert contents == {"Error: no such order", '{"error": "Not Found", "status": 404}'}
    table = runner.invoke(app, ["eval", "--base-url", fake_model.url, "--model", "fake-1", "--legacy-from-store",
                                "--db-url", sqlite_url])
    assert "legacy agree" in table.stdout and "no logged legacy payloads for: validation_error" in table.stdout
    assert "On the same 30 examples: structured 90% agree, legacy 33%." in table.stdout


def test_eval_legacy_from_an_empty_or_missing_store_is_refused(fake_model: FakeModel, tmp_path: Path) -> None:
    missing = runner.invoke(app, ["eval", "--base-url", fake_model.url, "--model", "m", "--legacy-from-store",
                                  "--db-url", f"sqlite:///{tmp_path}/none.db"])
    assert missing.exit_code == 2 and "no shadow log" in missing.stderr
    url = f"sqlite:///{tmp_path}/empty.db"
    engine = db.create(url)
    metadata.create_all(engine)
    engine.dispose()
    empty = runner.invoke(app, ["eval", "--base-url", fake_model.url, "--model", "m", "--legacy-from-store",
                                "--db-url", url])
    assert empty.exit_code == 2 and "no legacy error payloads" in empty.stderr
    assert fake_model.requests == []
