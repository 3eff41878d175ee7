"""Deliberate errors keep the author's words: what the model read in legacy is what it reads in cutover."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import shadow
from shadow.contract import Code, Rules
from shadow.contract._author import fit_message, shown_name
from shadow.contract._payloads import MAX_MESSAGE_CHARS, MAX_SENTENCES, check_message, count_sentences

GENERIC = "The tool failed unexpectedly. Tell the user the operation could not be completed."


@pytest.mark.parametrize(
    ("legacy", "message"),
    [
        ("Error: this fare class earns no loyalty points", "this fare class earns no loyalty points"),
        ({"error": "the chef says no"}, "the chef says no"),
        ({"ok": False, "message": "promotions stack with nothing else"}, "promotions stack with nothing else"),
    ],
)
def test_an_unplaced_returned_error_is_rejected_with_the_authors_text_never_stop(legacy: object, message: str) -> None:
    found = Rules.default().translate_result(legacy)
    assert found is not None
    assert found.unmapped  # still gates cutover
    body = found.error.payload()["error"]
    assert body["code"] == "rejected"
    assert body["message"] == message
    assert body["next_action"] == "ask_user"
    assert body["retryable"] is False


@pytest.mark.parametrize(
    ("legacy", "code"),
    [
        ("Error: no seats left on train 4411", "failed_precondition"),
        ({"error": "voucher balance too low"}, "failed_precondition"),
        ({"ok": False, "message": "coupon cannot be applied to this order"}, "failed_precondition"),
        ("Error: totals do not match: 120 vs 95", "validation_error"),
        ({"error": "room 12 is not free on 2025-03-02"}, "failed_precondition"),
        ({"error": "not enough balance in payment method card_88213"}, "failed_precondition"),
        ({"error": "billing backend timed out"}, "upstream_timeout"),
        ({"error": "billing API returned 500"}, "upstream_unavailable"),
        ({"error": "Repository 'acme/billing-service' not found"}, "not_found"),
    ],
)
def test_business_rule_and_service_texts_are_placed_by_what_they_say_not_by_a_product_word(
    legacy: object, code: str,
) -> None:
    found = Rules.default().translate_result(legacy)
    assert found is not None and not found.unmapped
    body = found.error.payload()["error"]
    assert body["code"] == code
    assert body["next_action"] != "stop"
    assert body["message"] in json.dumps(legacy)


def test_a_placed_returned_error_keeps_the_authors_text_with_the_placed_code() -> None:
    found = Rules.default().translate_result({"error": "Order ORD-88213 not found"})
    assert found is not None and not found.unmapped
    assert found.error.code is Code.NOT_FOUND
    assert found.error.message == "Order ORD-88213 not found"


def test_a_status_placed_value_keeps_its_text_and_a_bare_status_gets_the_codes_default() -> None:
    with_text = Rules.default().translate_result({"status": 409, "error": "seat 12A was taken meanwhile"})
    bare = Rules.default().translate_result({"status": 409})
    assert with_text is not None and with_text.error.code is Code.CONFLICT
    assert with_text.error.message == "seat 12A was taken meanwhile"
    assert bare is not None and bare.error.message.startswith("The request conflicts with the current state")


def test_a_rules_own_message_wins_over_the_authors_text() -> None:
    rules = Rules.default().on_result(r"no seats left", "failed_precondition", "The train is full. Offer another train.")
    found = rules.translate_result("Error: no seats left on train 4411")
    assert found is not None and found.error.message == "The train is full. Offer another train."
    assert found.error.code is Code.FAILED_PRECONDITION and not found.unmapped


def test_a_plain_exception_the_model_never_saw_keeps_the_generic_message() -> None:
    found = Rules.default().translate_exception(ValueError("pool exhausted: password=hunter2 at db-7"))
    assert found.unmapped
    assert found.error.code is Code.INTERNAL_ERROR
    assert found.error.message == GENERIC


def test_a_frameworks_tool_error_is_shown_text_placed_by_the_phrase_table() -> None:
    fastmcp_exceptions = pytest.importorskip("fastmcp.exceptions")
    rules = Rules.default()
    placed = rules.translate_exception(fastmcp_exceptions.ToolError("Order ORD-7 not found"))
    unplaced = rules.translate_exception(fastmcp_exceptions.ToolError("train 4411 runs on Sundays"))
    assert (placed.error.code, placed.error.message, placed.unmapped) == (Code.NOT_FOUND, "Order ORD-7 not found", False)
    assert (unplaced.error.code, unplaced.error.message, unplaced.unmapped) == (
        Code.REJECTED, "train 4411 runs on Sundays", True)


def test_each_frameworks_model_facing_exception_is_recognised_without_importing_it_in_the_core() -> None:
    names = []
    for module, name in [("fastmcp.exceptions", "ToolError"), ("mcp.server.mcpserver.exceptions", "ToolError"),
                         ("langchain_core.tools", "ToolException"), ("pydantic_ai", "ModelRetry"),
                         ("pydantic_ai", "ToolFailed")]:
        cls = getattr(pytest.importorskip(module), name)

        class Sub(cls):  # type: ignore[misc,valid-type]
            pass

        names.append(shown_name(Sub("x")))
    assert all(names), names
    assert shown_name(ValueError("x")) is None


def test_an_unplaced_model_retry_asks_for_a_corrected_call_by_its_type() -> None:
    pydantic_ai = pytest.importorskip("pydantic_ai")
    found = Rules.default().translate_exception(pydantic_ai.ModelRetry("Pass a departure date after today"))
    assert found.error.code is Code.VALIDATION_ERROR and not found.unmapped
    assert found.error.message == "Pass a departure date after today"


def test_a_user_can_mark_their_own_exception_as_shown_to_the_model() -> None:
    class OrderRejected(Exception):
        pass

    rules = Rules.default().shown(OrderRejected)
    found = rules.translate_exception(OrderRejected("coupon SPRING25 stacks with no other offer"))
    assert found.error.code is Code.REJECTED
    assert found.error.message == "coupon SPRING25 stacks with no other offer"
    assert (rules + Rules.empty()).translate_exception(OrderRejected("x y z")).error.message == "x y z"
    with pytest.raises(TypeError, match="exception types"):
        Rules.default().shown("OrderRejected")  # type: ignore[arg-type]


def test_a_shown_exception_whose_str_raises_is_rejected_with_the_default_message() -> None:
    class Hostile(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    found = Rules.default().shown(Hostile).translate_exception(Hostile())
    assert found.error.code is Code.REJECTED and found.unmapped
    assert found.error.message.startswith("The tool refused the call.")


def test_credentials_in_the_authors_text_are_scrubbed() -> None:
    found = Rules.default().translate_result("Error: card declined for key sk_live_51Habcdefghijklmnopqrstuvwx")
    assert found is not None
    assert "sk_live_51Habcdefghijklmnopqrstuvwx" not in found.error.message


def test_a_returned_traceback_never_becomes_the_message() -> None:
    found = Rules.default().translate_result('Traceback (most recent call last):\n  File "x.py", line 1\nKeyError: 3')
    assert found is not None
    assert "Traceback" not in found.error.message and "x.py" not in found.error.message


@given(st.text(max_size=2000))
def test_any_authors_text_fits_the_contracts_message_rules(text: str) -> None:
    fitted = fit_message(text)
    if fitted is not None:
        assert check_message(fitted) == fitted
        assert len(fitted) <= MAX_MESSAGE_CHARS and count_sentences(fitted) <= MAX_SENTENCES


def test_a_long_authors_text_is_cut_at_two_sentences_with_an_ellipsis() -> None:
    fitted = fit_message("Error: The seat is gone. Pick another seat. Or another train. Or call us.")
    assert fitted == "The seat is gone. Pick another seat. \u2026"


def test_the_codes_paragraph_the_model_reads_documents_rejected() -> None:
    text = shadow.describe()
    assert "rejected" in text
    assert "own words" in text


def test_cutover_serves_the_authors_words_in_a_fresh_process(tmp_path: Path) -> None:
    script = tmp_path / "tool.py"
    script.write_text(textwrap.dedent("""
        import json, shadow
        @shadow.tool
        def book(train: str):
            return f"Error: train {train} runs on Sundays"
        print(json.dumps(book("4411")))
        shadow.flush()
    """))
    env = {**os.environ, "SHADOW_FLAGS": "*=cutover", "SHADOW_DB_URL": f"sqlite:///{tmp_path / 'log.db'}",
           "SHADOW_FINGERPRINT_KEY": "k" * 32}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=120, check=True).stdout
    body = json.loads(out.splitlines()[0])["error"]
    assert (body["code"], body["message"], body["next_action"]) == ("rejected", "train 4411 runs on Sundays", "ask_user")


@pytest.mark.parametrize(("value", "message"), [
    ({"error": "refund exceeds captured amount", "detail": "547.01 > 129.34"},
     "refund exceeds captured amount: 547.01 > 129.34"),
    ({"error": {"message": "Invalid date.", "hint": "Use YYYY-MM-DD"}}, "Invalid date. Use YYYY-MM-DD"),
    ({"error": "Seat unavailable", "reason": "coach 4 is full", "code": "E12"}, "Seat unavailable: coach 4 is full"),
    ({"error": "Order 7 not found", "detail": "not found"}, "Order 7 not found"),  # said already: once
    ({"error": "Not found", "details": {"id": 7}}, "Not found"),  # a structure is not words
    ({"error": "refund failed", "message": "refund exceeds captured amount (547.01 > 129.34)"},
     "refund failed: refund exceeds captured amount (547.01 > 129.34)"),
    ({"error": "invalid_grant", "error_description": "Token expired"}, "invalid_grant: Token expired"),
    # a traceback or a path is for a developer, never for the model
    ({"error": "crash", "detail": 'Traceback (most recent call last):\n  File "/srv/app/x.py", line 3'}, "crash"),
    ({"error": "export failed", "hint": "see /var/log/app/export.log"}, "export failed"),
])
def test_a_returned_errors_detail_beside_its_text_stays_in_the_served_message(
        value: dict[str, object], message: str) -> None:
    translated = Rules.default().translate_result(value)
    assert translated is not None and translated.error.message == message


def test_an_mcp_result_a_tool_returns_as_a_dict_is_read_by_its_flag_and_its_text() -> None:
    rules = Rules.default()
    returned = {"content": [{"type": "text", "text": "**Error:** Variable 'nope' not found\nAvailable variables: x1"}]}
    translated = rules.translate_result(returned)
    assert translated is not None and translated.error.code is Code.NOT_FOUND
    assert translated.error.message == "Variable 'nope' not found Available variables: x1"
    flagged = rules.translate_result({"content": [{"type": "text", "text": "Quota used up"}], "isError": True})
    assert flagged is not None and flagged.error.message == "Quota used up"
    assert rules.translate_result({"content": [{"type": "text", "text": "x = 5"}]}) is None
    assert rules.translate_result({"content": "Error: this is a document's text field"}) is None  # not MCP's shape


def test_an_mcp_result_dict_is_logged_as_an_error_in_shadow_mode() -> None:
    from shadow.testing import InMemoryFlags, InMemoryStore, recording

    flags = InMemoryFlags()
    flags.set("load_variable", "shadow")

    @shadow.tool(flags=flags)
    def load_variable(name: str) -> dict[str, object]:
        if name == "x1":
            return {"content": [{"type": "text", "text": "x1 = 5"}]}
        return {"content": [{"type": "text", "text": f"**Error:** Variable '{name}' not found"}]}

    with recording(InMemoryStore()) as store:
        load_variable("x1")
        load_variable("nope")
        shadow.flush(10)
    assert isinstance(store, InMemoryStore)
    records = sorted(store.records.values(), key=lambda r: r.seq)  # type: ignore[union-attr]
    assert [(r.outcome, r.code) for r in records] == [("ok", None), ("error", "not_found")]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "legacy",
    [
        "Error: Access denied to file_path: ../../etc/passwd. Permission granted exclusively to the current working "
        "directory",  # LangChain's FileManagementToolkit
        {"error": "host resolves to a non-public address (127.0.0.1)"},
        {"error": "Failed to fetch http://127.0.0.1:9/admin: Access to private/internal IP address (127.0.0.1) is "
                  "blocked."},  # pydantic-ai's web_fetch
        "Access denied - path outside allowed directories: /etc/hosts not in /home/dana/projects",
        "Error: Access denied: path /etc/passwd (canonical: /etc/passwd) is not within any of the configured "
        "workspace roots.",
    ],
)
def test_a_denial_of_where_a_path_or_address_points_asks_for_another_never_stop(legacy: object) -> None:
    """The tool works for other paths: ``stop`` would give up on it for the task, which legacy's model never did."""
    found = Rules.default().translate_result(legacy)
    assert found is not None
    body = found.error.payload()["error"]
    assert (body["code"], body["next_action"], body["retryable"]) == ("permission_denied", "ask_user", False)
    assert body["message"].split()[-1].rstrip(".)") in str(legacy)  # the author's words


def test_a_denial_of_the_callers_rights_still_stops() -> None:
    for legacy in ("You are not allowed to deploy to production.", {"error": "Permission denied: /root/x"}):
        found = Rules.default().translate_result(legacy if isinstance(legacy, dict) else "Error: " + legacy)
        assert found is not None and found.error.payload()["error"]["next_action"] == "stop"


def test_a_blob_in_the_authors_text_is_cut_short_so_the_reason_after_it_is_read_and_kept() -> None:
    """server-everything: "Response from data:text/plain;base64,<6 KB> exceeds 1000 bytes" lost its reason."""
    import base64

    blob = "data:text/plain;base64," + base64.b64encode(b"x" * 4800).decode()
    found = Rules.default().translate_result({"error": f"Response from {blob} exceeds 1000 bytes"})
    assert found is not None and found.error.code is Code.PAYLOAD_TOO_LARGE
    assert found.error.message.endswith("\u2026 exceeds 1000 bytes")
    assert len(found.error.message) < 120
    secret = "sk-" + "a1B2c3D4" * 30  # a credential as long as a blob is scrubbed whole, never shown in part
    message = fit_message(f"Call failed with key {secret} for user")
    assert message is not None and "a1B2c3D4" not in message


def test_a_regex_rule_reads_the_message_of_an_object_result_that_is_not_error_shaped() -> None:
    """@kazuph/mcp-taskmanager returns {"status": "task_not_found", "message": "No such task found"} as JSON text."""
    rules = Rules.default().on_result(r"No such task found", "not_found")
    found = rules.translate_result({"status": "task_not_found", "message": "No such task found"})
    assert found is not None and found.error.code is Code.NOT_FOUND
    assert found.error.message == "No such task found"
    assert rules.translate_result({"status": "ok", "message": "Task created"}) is None


def test_a_rule_may_give_its_own_next_action_and_a_retry_is_never_given_to_a_tool_that_is_not_idempotent() -> None:
    rules = Rules.default().on_result(r"read-only mode", "permission_denied", next_action="ask_user")
    found = rules.translate_result("Error: Operation 'DELETE' is forbidden in read-only mode")
    assert found is not None
    assert (found.error.code, found.error.next_action.value, found.error.retryable) == (
        Code.PERMISSION_DENIED, "ask_user", False)
    slow = Rules.default().on(TimeoutError, "internal_error", next_action="retry")
    assert slow.translate_exception(TimeoutError("x")).error.retryable is True
    assert slow.translate_exception(TimeoutError("x"), idempotent=False).error.next_action.value == "ask_user"
    assert rules.fingerprint != Rules.default().on_result(r"read-only mode", "permission_denied").fingerprint
    with pytest.raises(ValueError, match="next_action must be one of"):
        Rules.default().on_result("x", "not_found", next_action="again")


@pytest.mark.parametrize("legacy", ["IndexError('list index out of range')",
                                    "ModuleNotFoundError(\"No module named 'nosuchmodule'\")"])
def test_an_exception_repr_the_tool_returned_is_never_read_as_its_own_failure(legacy: str) -> None:
    """LangChain's Python REPL and JSON tools return repr(e) of what running the model's input raised: the model can
    change its input, so a bug's code (internal_error, not_implemented: stop) would tell it less than the text."""
    found = Rules.default().translate_result(legacy)
    assert found is not None and found.unmapped
    body = found.error.payload()["error"]
    assert (body["code"], body["next_action"], body["message"]) == ("rejected", "ask_user", legacy)


def test_a_shown_exception_whose_text_is_a_bare_value_keeps_its_class_name() -> None:
    """LangGraph shows repr(e): "<InvalidUrlClientError not%20a%20url>"; the value alone says nothing of what is wrong."""
    class InvalidUrlClientError(Exception):
        pass

    found = Rules.default().translate_exception(InvalidUrlClientError("not%20a%20url"), shown=True)
    assert found.error.message == "InvalidUrlClientError: not%20a%20url"
    bug = Rules.default().translate_exception(KeyError("sku-1"), shown=True)
    assert (bug.error.code, bug.error.message) == (Code.INTERNAL_ERROR, "KeyError: 'sku-1'")
    worded = Rules.default().translate_exception(ValueError("Principal must be greater than 0"), shown=True)
    assert worded.error.message == "Principal must be greater than 0"


def test_a_detail_that_already_says_the_text_is_served_alone_not_after_it() -> None:
    """csv-mcp-server: {"error": "File not found: sales.csv", "message": "Invalid file path: File not found: ..."}."""
    found = Rules.default().translate_result({"success": False, "error": "File not found: sales.csv",
                                              "message": "Invalid file path: File not found: sales.csv"})
    assert found is not None and found.error.message == "Invalid file path: File not found: sales.csv"


def test_a_name_taken_asks_for_another_never_stop() -> None:
    """@cyanheads/git-mcp-server's git_branch: ``stop`` gave up on a tool that also lists and deletes branches."""
    legacy = ("Error: Git branch failed: Exit Code: 128\nStderr: fatal: a branch named 'feature' already exists\n\n"
              "Stdout: ")
    found = Rules.default().translate_result(legacy)
    assert found is not None
    body = found.error.payload()["error"]
    assert (body["code"], body["next_action"]) == ("already_exists", "ask_user")
    assert "a branch named 'feature' already exists" in body["message"]
    for taken in ("Error executing tool create_workbook: sales.xlsx already exists. Pass overwrite=true to replace "
                  "it.",  # excel-mcp-server: the author says how to go on
                  {"success": False, "error": "table customers already exists", "code": "EXECUTION_ERROR"}):  # dbhub
        found = Rules.default().translate_result(taken)
        assert found is not None and (found.error.code.value, found.error.next_action.value) == (
            "already_exists", "ask_user")
    done = Rules.default().translate_result({"error": "Order ORD-1 already exists"})
    assert done is not None and done.error.next_action.value == "stop"  # the work is done: not a name
