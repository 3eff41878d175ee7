"""Provider error normalizers: statuses and headers, real httpx/requests/OpenAI/Anthropic exceptions, MCP texts."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator

import anthropic
import httpx
import httpx2
import openai
import pytest
import requests
from mcp.shared.exceptions import MCPError
from requests.structures import CaseInsensitiveDict

import shadow
from shadow._decorator import tool
from shadow.calllog._records import CallRecord
from shadow.contract._guard import outcome_of_exception, outcome_of_value
from shadow.contract._rules import Rules
from shadow.normalize import _http as normalize
from shadow.testing import InMemoryFlags, InMemoryStore, assert_no_leak, assert_valid_payload, recording

SECRET = "sk-proj-abcdefghijklmnop1234"
OPENAI_URL = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"


def openai_response(status: int, body: dict[str, object], headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, request=httpx2.Request("POST", OPENAI_URL), headers=headers or {}, json=body)


def anthropic_response(status: int, body: dict[str, object],
                       headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, request=httpx2.Request("POST", ANTHROPIC_URL), headers=headers or {}, json=body)


def anthropic_body(kind: str, message: str, error_code: str | None = None) -> dict[str, object]:
    error: dict[str, object] = {"type": kind, "message": message}
    if error_code:
        error["details"] = {"error_code": error_code}
    return {"type": "error", "error": error}


def requests_response(status: int, headers: dict[str, str], body: bytes = b"",
                      url: str = "https://api.example.com/x") -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response.headers = CaseInsensitiveDict(headers)
    response._content = body
    response.url = url
    return response


def code_of(exc: BaseException, rules: Rules | None = None) -> tuple[str, str | None, dict[str, object] | None]:
    outcome = outcome_of_exception(exc, rules=rules or Rules.default() + normalize.http(), quiet=True)
    assert outcome.error is not None
    assert_valid_payload(outcome.payload)
    assert_no_leak(outcome.payload, secrets=[SECRET])
    return outcome.error.code.value, outcome.rule, outcome.error.context


# ---------------------------------------------------------------- Retry-After


NOW = dt.datetime(2025, 3, 14, 9, 0, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(("headers", "expected"), [
    ({"Retry-After": "3"}, 3000),
    ({"retry-after": "1.5"}, 1500),
    ({"Retry-After": "Fri, 14 Mar 2025 09:00:30 GMT"}, 30_000),
    ({"Retry-After": "Fri, 14 Mar 2025 08:00:00 GMT"}, 0),
    ({"retry-after-ms": "250", "Retry-After": "9"}, 250),
    ({"Retry-After": "soon"}, None),
    ({"Retry-After": "-4"}, None),
    ({}, None),
])
def test_retry_after_reads_seconds_dates_and_milliseconds(headers: dict[str, str], expected: int | None) -> None:
    assert normalize.retry_after_ms(headers, now=NOW) == expected


def test_retry_after_reads_each_client_s_header_type() -> None:
    for headers in (httpx.Headers({"Retry-After": "2"}), httpx2.Headers({"Retry-After": "2"}),
                    CaseInsensitiveDict({"Retry-After": "2"})):
        assert normalize.retry_after_ms(headers) == 2000


# ---------------------------------------------------------------- statuses


@pytest.mark.parametrize(("status", "part"), [(413, "body"), (414, "uri"), (431, "headers")])
def test_too_large_statuses_name_the_part_that_was_too_large(status: int, part: str) -> None:
    error = normalize.response_error(status)
    assert error.code.value == "payload_too_large"
    assert error.context is not None and error.context["part"] == part
    assert_valid_payload(error.payload())


def test_431_names_the_header_when_the_service_says_which() -> None:
    error = normalize.response_error(431, {}, "Request Header Or Cookie Too Large")
    assert error.context == {"status": 431, "part": "headers", "header": "cookie"}


@pytest.mark.parametrize(("status", "code"), [
    (400, "validation_error"), (401, "unauthenticated"), (402, "quota_exceeded"), (403, "permission_denied"),
    (404, "not_found"), (408, "upstream_timeout"), (409, "conflict"), (412, "failed_precondition"),
    (415, "unsupported_input"), (422, "validation_error"), (429, "rate_limited"), (499, "cancelled"),
    (500, "upstream_unavailable"), (501, "not_implemented"), (502, "upstream_unavailable"),
    (503, "upstream_unavailable"), (504, "upstream_timeout"), (529, "upstream_unavailable"),
    (418, "validation_error"), (599, "upstream_unavailable"),
])
def test_each_status_maps_to_its_code(status: int, code: str) -> None:
    error = normalize.response_error(status)
    assert error.code.value == code
    assert_valid_payload(error.payload())


def test_a_rate_limit_carries_retry_after_and_says_how_long_to_wait() -> None:
    error = normalize.response_error(429, {"Retry-After": "7"})
    assert (error.code.value, error.retryable, error.next_action.value) == ("rate_limited", True, "retry")
    assert error.context == {"status": 429, "retry_after_ms": 7000}
    assert "7 s" in error.message


def test_a_non_idempotent_tool_is_not_told_to_retry_a_gateway_timeout() -> None:
    error = normalize.response_error(504, idempotent=False)
    assert (error.code.value, error.retryable, error.next_action.value) == ("upstream_timeout", False, "ask_user")


def test_response_error_rejects_a_status_that_is_not_an_error() -> None:
    with pytest.raises(ValueError, match="400 to 599"):
        normalize.response_error(200)


# ---------------------------------------------------------------- OpenAI


def test_openai_insufficient_quota_is_quota_exceeded_not_a_rate_limit() -> None:
    body = {"message": f"You exceeded your current quota; key {SECRET}", "type": "insufficient_quota",
            "code": "insufficient_quota"}
    exc = openai.RateLimitError("quota", response=openai_response(429, {"error": body}, {"retry-after": "20"}),
                                body=body)
    code, rule, context = code_of(exc)
    assert (code, rule) == ("quota_exceeded", "openai:quota_exceeded")
    assert context == {"status": 429}  # no retry hint: waiting a few seconds does not refill a quota


def test_openai_rate_limit_is_rate_limited_with_the_wait() -> None:
    body = {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}
    exc = openai.RateLimitError("rl", response=openai_response(429, {"error": body}, {"retry-after-ms": "1200"}),
                                body=body)
    assert code_of(exc) == ("rate_limited", "openai:rate_limited", {"status": 429, "retry_after_ms": 1200})


def test_openai_context_length_is_payload_too_large_of_the_context_window() -> None:
    body = {"message": "maximum context length is 8192 tokens", "type": "invalid_request_error",
            "code": "context_length_exceeded", "param": "messages"}
    exc = openai.BadRequestError("long", response=openai_response(400, {"error": body}), body=body)
    code, _rule, context = code_of(exc)
    assert code == "payload_too_large"
    assert context == {"status": 400, "field": "messages", "part": "context_window"}


def test_openai_bad_request_names_the_parameter() -> None:
    body = {"message": "Invalid type for 'temperature'", "type": "invalid_request_error", "code": None,
            "param": "temperature"}
    exc = openai.BadRequestError("bad", response=openai_response(400, {"error": body}), body=body)
    assert code_of(exc) == ("validation_error", "openai:validation_error", {"status": 400, "field": "temperature"})


@pytest.mark.parametrize(("make", "code"), [
    (lambda r: openai.AuthenticationError("a", response=openai_response(401, {}), body=None), "unauthenticated"),
    (lambda r: openai.PermissionDeniedError("p", response=openai_response(403, {}), body=None), "permission_denied"),
    (lambda r: openai.NotFoundError("n", response=openai_response(404, {}), body=None), "not_found"),
    (lambda r: openai.InternalServerError("i", response=openai_response(500, {}), body=None), "upstream_unavailable"),
    (lambda r: openai.APITimeoutError(request=r), "upstream_timeout"),
    (lambda r: openai.APIConnectionError(request=r), "upstream_unavailable"),
])
def test_openai_exceptions_map_by_class_and_status(make: object, code: str) -> None:
    exc = make(httpx2.Request("POST", OPENAI_URL))  # type: ignore[operator]
    assert code_of(exc)[0] == code


# ---------------------------------------------------------------- Anthropic


def test_anthropic_rate_limit_with_retry_after_is_rate_limited() -> None:
    body = anthropic_body("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
    exc = anthropic.RateLimitError("rl", response=anthropic_response(429, body, {"retry-after": "12"}), body=body)
    assert code_of(exc) == ("rate_limited", "anthropic:rate_limited", {"status": 429, "retry_after_ms": 12_000})


def test_anthropic_429_without_retry_after_is_the_spend_limit() -> None:
    body = anthropic_body("rate_limit_error", "This request would exceed your organization's limit")
    exc = anthropic.RateLimitError("limit", response=anthropic_response(429, body), body=body)
    assert code_of(exc)[0] == "quota_exceeded"


@pytest.mark.parametrize("body", [
    anthropic_body("billing_error", "Your credit balance is too low to access the Anthropic API."),
    anthropic_body("rate_limit_error", "limit reached", error_code="enforced_spend_limit_reached"),
])
def test_anthropic_billing_and_spend_limit_errors_are_quota_exceeded(body: dict[str, object]) -> None:
    status = 400 if body["error"]["type"] == "billing_error" else 429  # type: ignore[index]
    cls = anthropic.BadRequestError if status == 400 else anthropic.RateLimitError
    exc = cls("quota", response=anthropic_response(status, body, {"retry-after": "5"}), body=body)
    assert code_of(exc)[0] == "quota_exceeded"


def test_anthropic_overloaded_and_timeouts_are_upstream_failures() -> None:
    body = anthropic_body("overloaded_error", "Overloaded")
    overloaded = anthropic.OverloadedError("busy", response=anthropic_response(529, body), body=body)
    assert code_of(overloaded)[:2] == ("upstream_unavailable", "anthropic:upstream_unavailable")
    timeout = anthropic.APITimeoutError(request=httpx2.Request("POST", ANTHROPIC_URL))
    assert code_of(timeout)[:2] == ("upstream_timeout", "anthropic:timeout")


def test_anthropic_request_too_large_is_payload_too_large() -> None:
    body = anthropic_body("request_too_large", "Request exceeds the maximum allowed number of bytes")
    exc = anthropic.ContentTooLargeError("big", response=anthropic_response(413, body), body=body)
    assert code_of(exc)[0] == "payload_too_large"


# ---------------------------------------------------------------- httpx, httpx2 and requests


@pytest.mark.parametrize("client", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_httpx_status_errors_read_status_headers_and_body(client: object) -> None:
    request = client.Request("GET", "https://api.example.com/items/9")  # type: ignore[attr-defined]
    response = client.Response(503, request=request, headers={"Retry-After": "4"})  # type: ignore[attr-defined]
    exc = client.HTTPStatusError("503", request=request, response=response)  # type: ignore[attr-defined]
    name = client.__name__  # type: ignore[attr-defined]
    assert code_of(exc) == ("upstream_unavailable", f"{name}:upstream_unavailable",
                            {"status": 503, "retry_after_ms": 4000})
    quota = client.Response(429, request=request, json={"error": {"code": "quota_exceeded"}})  # type: ignore[attr-defined]
    assert code_of(client.HTTPStatusError("429", request=request, response=quota))[0] == "quota_exceeded"  # type: ignore[attr-defined]


@pytest.mark.parametrize("client", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_httpx_timeouts_and_connection_errors(client: object) -> None:
    request = client.Request("GET", "https://api.example.com/")  # type: ignore[attr-defined]
    for cls in ("ReadTimeout", "ConnectTimeout", "WriteTimeout", "PoolTimeout"):
        assert code_of(getattr(client, cls)("slow", request=request))[0] == "upstream_timeout"
    for cls in ("ConnectError", "ReadError", "RemoteProtocolError"):
        assert code_of(getattr(client, cls)("down", request=request))[0] == "upstream_unavailable"


def test_requests_errors_map_by_status_and_kind() -> None:
    response = requests_response(404, {"Content-Type": "application/json"}, b'{"error": "no such item"}')
    assert code_of(requests.HTTPError("404", response=response))[:2] == ("not_found", "requests:not_found")
    limited = requests_response(429, {"Retry-After": "2"})
    assert code_of(requests.HTTPError("429", response=limited))[2] == {"status": 429, "retry_after_ms": 2000}
    assert code_of(requests.ConnectTimeout("slow"))[0] == "upstream_timeout"  # a ConnectionError too: timeout wins
    assert code_of(requests.ReadTimeout("slow"))[0] == "upstream_timeout"
    assert code_of(requests.ConnectionError("refused"))[0] == "upstream_unavailable"


# ---------------------------------------------------------------- composing with Rules.default()


def every_exception() -> Iterator[BaseException]:
    request, request2 = httpx.Request("GET", "https://x.example/"), httpx2.Request("POST", OPENAI_URL)
    yield httpx.ReadTimeout("t", request=request)
    yield httpx.ConnectError("c", request=request)
    yield httpx.HTTPStatusError("s", request=request, response=httpx.Response(429, request=request))
    yield httpx2.ReadTimeout("t", request=request2)
    yield requests.ConnectionError("c")
    yield requests.ReadTimeout("t")
    yield requests.HTTPError("s", response=requests_response(413, {}))
    body = {"code": "insufficient_quota"}
    yield openai.RateLimitError("q", response=openai_response(429, {"error": body}), body=body)
    yield openai.APITimeoutError(request=request2)
    yield anthropic.APIConnectionError(request=httpx2.Request("POST", ANTHROPIC_URL))


@pytest.mark.parametrize("exc", list(every_exception()), ids=lambda e: type(e).__module__ + "." + type(e).__name__)
def test_default_plus_http_maps_like_http_plus_default(exc: BaseException) -> None:
    left = code_of(exc, Rules.default() + normalize.http())
    right = code_of(exc, normalize.http() + Rules.default())
    assert left == right
    assert left[1] is not None and ":" in left[1]  # an http() rule, not a built-in one
    unmapped = outcome_of_exception(exc, rules=Rules.default(), quiet=True)
    assert unmapped.unmapped  # the built-in rules alone do not know these


def test_a_returned_response_object_is_read_as_an_error() -> None:
    request = httpx.Request("GET", "https://api.example.com/")
    value = httpx.Response(429, request=request, headers={"Retry-After": "1"})
    outcome = outcome_of_value(value, rules=Rules.default() + normalize.http())
    assert outcome.error is not None and outcome.error.code.value == "rate_limited"
    assert outcome.error.context == {"status": 429, "retry_after_ms": 1000}
    ok = outcome_of_value(httpx.Response(200, request=request), rules=Rules.default() + normalize.http())
    assert ok.error is None


def test_for_response_shaped_dicts_the_order_decides_which_reading_wins() -> None:
    value = {"status": 429, "headers": {"Retry-After": "3"}, "body": {"error": {"code": "insufficient_quota"}}}
    first = outcome_of_value(value, rules=normalize.http() + Rules.default())
    assert first.error is not None and first.error.code.value == "quota_exceeded"
    last = outcome_of_value(value, rules=Rules.default() + normalize.http())
    assert last.error is not None and last.error.code.value == "rate_limited"  # the built-in status rule came first


def test_the_adapter_serves_a_normalised_provider_error_in_cutover() -> None:
    memory = InMemoryStore()
    with recording(memory):
        @tool(name="ask_model", rules=Rules.default() + normalize.http(), flags=InMemoryFlags({"ask_model": "cutover"}))
        def ask_model(prompt: str) -> str:
            body = {"message": "Rate limit reached", "code": "rate_limit_exceeded"}
            raise openai.RateLimitError("rl", response=openai_response(429, {"error": body}, {"retry-after": "2"}),
                                        body=body)

        with shadow.session("norm-1"):
            payload = ask_model("hi")
    assert payload["ok"] is False
    assert payload["error"]["code"] == "rate_limited"
    assert payload["error"]["context"] == {"status": 429, "retry_after_ms": 2000}
    [record] = [r for r in memory.records.values() if isinstance(r, CallRecord)]
    assert (record.code, record.rule, record.retry_after_ms) == ("rate_limited", "openai:rate_limited", 2000)


# ---------------------------------------------------------------- MCP texts and JSON-RPC errors


MCP_RULES = normalize.mcp() + Rules.default()


def mcp_code(text: str, *, is_error: bool | None = True) -> tuple[str | None, str | None, dict[str, object] | None]:
    outcome = outcome_of_value(normalize.tool_text_value(text, is_error=is_error), rules=MCP_RULES)
    assert_valid_payload(outcome.payload)
    if outcome.error is None:
        return None, None, None
    return outcome.error.code.value, outcome.rule, outcome.error.context


def test_the_sdk_prefix_is_removed_so_the_tool_name_never_decides_the_code() -> None:
    assert normalize.mcp_error_value("Error executing tool get_timeout: user 7 not found") == {
        "ok": False, "error": "user 7 not found", "tool": "get_timeout"}
    assert mcp_code("Error executing tool get_timeout: user 7 not found")[0] == "not_found"


def test_argument_validation_text_names_the_field() -> None:
    text = ("Error executing tool add: 1 validation error for addArguments\nb\n  Field required "
            "[type=missing, input_value={'a': 1}, input_type=dict]")
    code, rule, context = mcp_code(text)
    assert (code, rule) == ("validation_error", "mcp:validation")
    assert context == {"field": "b", "problem": "Field required"}
    jsonschema_text = "Input validation error: 'city' is a required property"
    assert mcp_code(jsonschema_text)[::2] == ("validation_error", {"field": "city", "problem": "required"})


def test_the_typescript_sdks_zod_issues_keep_their_fields_and_problems_in_the_message() -> None:
    """server-memory and server-everything (SDK 1.32): one ``<problem> at <path>`` line per zod issue."""
    text = ("MCP error -32602: Input validation error: Invalid arguments for tool create_entities: Required at "
            "entities[0].entityType\nExpected array, received string at entities[0].observations")
    found = MCP_RULES.translate_result(normalize.tool_text_value(text, is_error=True))
    assert found is not None and found.rule == "mcp:input-validation"
    assert found.error.context == {"field": "entities[0].entityType", "problem": "Required"}
    assert "entities[0].entityType: Required; entities[0].observations: Expected array, received string" in (
        found.error.message)
    bare = MCP_RULES.translate_result(normalize.tool_text_value(
        "MCP error -32602: Input validation error: Invalid arguments for tool x: Expected object", is_error=True))
    assert bare is not None and bare.error.message == "Invalid arguments for tool x: Expected object"


def test_a_long_zod_problem_is_cut_after_a_word_and_many_issues_still_fit_the_message() -> None:
    """@cyanheads/git-mcp-server's git_clean: "(or use dryRun to previe)"; four long issues made the rule fail."""
    text = ("MCP error -32602: Input validation error: Invalid arguments for tool git_clean: force flag must be set "
            "to true to clean untracked files (or use dryRun to preview) at force")
    found = MCP_RULES.translate_result(normalize.tool_text_value(text, is_error=True))
    assert found is not None and "(or use dryRun to preview))." in found.error.message
    long = "is described in a sentence that goes on and on well past any sensible limit for one short message"
    text = "Input validation error: Invalid arguments for tool x:\n" + "\n".join(
        f"field {i} {long} at field_{i}_with_a_rather_long_name" for i in range(4))
    found = MCP_RULES.translate_result(normalize.tool_text_value(text, is_error=True))
    assert found is not None and found.rule == "mcp:input-validation"
    assert "field_0_with_a_rather_long_name: field 0 is described" in found.error.message
    assert "…" in found.error.message and "goes on and o…" not in found.error.message

    # dbhub's zod enum: "Invalid enum value. Expected ..." made the message three sentences and the rule failed
    text = ("MCP error -32602: Input validation error: Invalid arguments for tool search_objects: Invalid enum value. "
            "Expected 'schema' | 'table' | 'index', received 'view' at object_type")
    found = MCP_RULES.translate_result(normalize.tool_text_value(text, is_error=True))
    assert found is not None and found.rule == "mcp:input-validation" and found.error.code.value == "validation_error"
    assert "object_type: Invalid enum value; Expected 'schema' | 'table' | 'index', received 'view'" in (
        found.error.message)


def test_unknown_tool_and_a_bare_crash_are_mapped() -> None:
    assert mcp_code("Unknown tool: search_everything")[:2] == ("not_found", "mcp:unknown-tool")
    assert mcp_code("Error executing tool boom")[:2] == ("internal_error", "mcp:crash")


def test_the_error_flag_decides_and_json_error_bodies_are_read() -> None:
    assert mcp_code("it did not work", is_error=True)[0] == "rejected"  # an error in the tool's words; no rule places it
    assert mcp_code("it did not work", is_error=None)[0] is None
    assert mcp_code(json.dumps({"error": "rate limit hit"}), is_error=True)[0] == "rate_limited"
    assert mcp_code("Error executing tool x: quota exhausted", is_error=None)[0] == "quota_exceeded"


@pytest.mark.parametrize(("rpc", "code"), [(-32001, "upstream_timeout"), (-32000, "upstream_unavailable"),
                                           (-32602, "validation_error"), (-32601, "not_implemented"),
                                           (-32603, "upstream_unavailable")])
def test_jsonrpc_errors_map_by_code(rpc: int, code: str) -> None:
    outcome = outcome_of_exception(MCPError(code=rpc, message=f"boom {SECRET}"), rules=MCP_RULES, quiet=True)
    assert outcome.error is not None and outcome.error.code.value == code
    assert outcome.error.context == {"jsonrpc_code": rpc}
    assert_no_leak(outcome.payload, secrets=[SECRET])


def test_a_streamed_body_is_never_read() -> None:
    reads: list[object] = []

    class Raw:
        def read(self, *args: object, **_kwargs: object) -> bytes:
            reads.append(args)
            return b""

        def stream(self, *args: object, **_kwargs: object) -> Iterator[bytes]:
            reads.append(args)
            yield b'{"error": "quota"}'

    response = requests.Response()
    response.status_code = 503
    response.headers = CaseInsensitiveDict({"Retry-After": "1"})
    response.raw = Raw()  # _content stays False: an unread stream
    assert code_of(requests.HTTPError("503", response=response))[2] == {"status": 503, "retry_after_ms": 1000}
    assert reads == []
    request = httpx.Request("GET", "https://api.example.com/")
    streamed = httpx.Response(502, request=request, stream=httpx.ByteStream(b'{"error": "x"}'))
    assert code_of(httpx.HTTPStatusError("502", request=request, response=streamed))[0] == "upstream_unavailable"
