"""The phrase table's families read only the text they were written for: each tightened family next to a text
it still reads."""

from __future__ import annotations

import pytest

import shadow

UNPLACED = "unplaced"


def _served(text: str) -> str:
    """The code served for a legacy ``{"error": text}`` result, or ``unplaced`` (``rejected`` in the author's words)."""
    found = shadow.Rules.default().translate_result({"error": text})
    assert found is not None
    return UNPLACED if found.unmapped and found.error.code.value == "rejected" else found.error.code.value


@pytest.mark.parametrize(("text", "was", "served"), [
    # "cannot be Xed" needs the state that forbids it; "could not be Xed" reports a failure, not a business rule
    ("Certificate cannot be used to update reservation", "failed_precondition", UNPLACED),
    ("'UserForm1' is a form; forms cannot be changed.", "failed_precondition", UNPLACED),
    ("Schedule not found or could not be deleted: 42", "failed_precondition", "not_found"),
    # a duplicate must be named, not a warning that a retry may start one
    ("the stream ended early, so a second call may start a duplicate run", "already_exists", UNPLACED),
    # a character set is a value's form, not a kind of input
    ("Invalid identifier 'a-b': only alphanumeric, underscore, and $ are allowed", "unsupported_input",
     "validation_error"),
    # "not supported" of a value is no missing operation
    ("Spaces inside the type name are allowed; Python percent formatting and $name$ are not supported",
     "not_implemented", UNPLACED),
    # the author warns that repeating the call is unsafe: no code that says "make the identical call again"
    ("The statement was applied, then reading its outcome failed, so do not retry it. Could not connect to the "
     "server", "upstream_unavailable", UNPLACED),
    # "not allowed" / "not permitted" said of a field, a value or a form element is about the call's form
    ("Extra inputs are not permitted", "permission_denied", "validation_error"),
    ("Field 'colour' is not allowed", "permission_denied", "validation_error"),
    ("HTML tags are not allowed in the title", "permission_denied", "validation_error"),
    ("Method Not Allowed", "permission_denied", "unsupported_input"),  # HTTP 405: this endpoint takes no such call
    ("Refusing to write an empty file", "permission_denied", UNPLACED),
    # an abort with a stated cause is read by the cause
    ("Upload aborted: file too large", "cancelled", "payload_too_large"),
    ("The operation was aborted due to timeout", "cancelled", "upstream_timeout"),
    ("current transaction is aborted, commands ignored until end of transaction block", "cancelled", UNPLACED),
    # too many of something open is the current state; too many at once is a rate limit: neither is a used-up quota
    ("Too many tabs open; close one first", "quota_exceeded", "failed_precondition"),
    ("Too many concurrent runs", "quota_exceeded", "rate_limited"),
    # "not available" alone says nothing of state; a service not available is unavailable
    ("The page is not available in your region", "failed_precondition", UNPLACED),
    ("Service not available", "failed_precondition", "upstream_unavailable"),
    # an unexpected type, a missing or an expected part of what a service returned is no input of the caller's
    ("Unexpected response type from server", "unsupported_input", UNPLACED),
    ("Expected a response from the server but got none", "validation_error", UNPLACED),
    ("Missing data in upstream response", "validation_error", UNPLACED),
    # "loopback" alone is no address the tool refused
    ("Loopback interface is down", "permission_denied", UNPLACED),
    # the sixth batch's fresh layers: a word of a side clause or of the remedy decided; the statement decides now
    ("Could not connect to the database. Last error: Authentication failed.", "upstream_unavailable",
     "unauthenticated"),
    ("Report export is still being generated. Try again later.", "upstream_unavailable", "failed_precondition"),
    ('Session "s-41" does not exist or has expired.', "failed_precondition", "not_found"),
    ("Forbidden. Access to workspace 'acme' was denied; re-authenticate with an account in that workspace.",
     "unauthenticated", "permission_denied"),
    ("Slack client not initialized", "failed_precondition", "internal_error"),
    ("Error running code: unsupported operand type(s) for -: 'str' and 'int'", "unsupported_input",
     "validation_error"),
    ("When 'delete' operations are disabled, you can not drop a table.", UNPLACED, "permission_denied"),
    ("User did not approve the transfer, so nothing was sent.", UNPLACED, "cancelled"),
    ("limit should be an integer between 1 and 50", UNPLACED, "validation_error"),
    ("Token refresh failed: invalid_grant", "validation_error", "unauthenticated"),
    # the seventh batch's fresh layers: a feature named like a limit, a lexical token, a form rule said with
    # "not allowed", a second run of a single-run thing, a missing program, an answer the tool could not read
    # the eighth batch's fresh layers: a side rule or a remedy after the first sentence, or a status line the layer
    # appends to every message, decided by table order; the first sentence decides now
    ("Operation 'trigger_dag' is blocked: running in read-only mode (AF_READ_ONLY=true). Only read operations are "
     "allowed.", "unsupported_input", "permission_denied"),
    ("Too many requests. Please try again later.", "upstream_unavailable", "rate_limited"),
    ("Error executing query: SQL compilation error:\nObject 'SALES.ORDERS' does not exist or not authorized. \n "
     "Code: 500", "upstream_unavailable", "not_found"),
    ("Cortex Search Error: An error has occurred.\n\nError Message: Request timed out \n Code: 500",
     "upstream_unavailable", "upstream_timeout"),
    ("Output path cannot be a URL, must be a local file path", "unsupported_input", "validation_error"),
    ("Error processing PDF: EOF marker not found", "not_found", "unsupported_input"),
    ("Request throttling is not supported with a proxy configured.", "rate_limited", "unsupported_input"),
    ("selector contains an invalid token near ')'", "unauthenticated", "validation_error"),
    ('Providing both "page" and "cursor" is not allowed.', "permission_denied", "validation_error"),
    ("A recording is already running. Only one recording can be running at a time.", "validation_error",
     "conflict"),
    ("Workspace already provisioned.", "failed_precondition", "already_exists"),
    ("pandoc is required for document conversion but was not found. Install pandoc and retry.", "not_found",
     "not_implemented"),
    ("Unexpected response format: {'message': 'Not Found'}", "not_found", "internal_error"),
    ("Expected image/* MIME type, got 'text/csv'.", "validation_error", "unsupported_input"),
])
def test_an_over_eager_reading_is_gone(text: str, was: str, served: str) -> None:
    assert was != served
    assert _served(text) == served


@pytest.mark.parametrize(("text", "served"), [
    ("Error: Non-pending order cannot be modified", "failed_precondition"),
    ("coupon cannot be applied to this order", "failed_precondition"),
    ("Dashboard is in YAML mode and cannot be edited from the UI", "failed_precondition"),
    ("Error executing query: Duplicate entry 'a@example.com' for key 'users.email'", "already_exists"),
    ("Security violation: Shell operator '|' is not supported. Set ALLOW_SHELL_OPERATORS=true to enable.",
     "unsupported_input"),
    ("'GetNodesHotThreadsTool' is not supported on OpenSearch Serverless", "not_implemented"),
    ("Could not connect to the server", "upstream_unavailable"),
    ("The user is not allowed to edit this page", "permission_denied"),
    ("Access to this path is not permitted", "permission_denied"),
    ("Request was cancelled by the user", "cancelled"),
    ("Too many projects for this plan", "quota_exceeded"),
    ("Flight HAT039 not available on date 2024-05-22", "failed_precondition"),
    ("Unexpected resource type: blob", "unsupported_input"),
    ("Expected an integer", "validation_error"),
    ("Missing field 'id'", "validation_error"),
    ("Refusing to fetch loopback host 'localhost'", "permission_denied"),
    ("Your session has expired. Please log in again.", "unauthenticated"),
    ("Please re-authenticate", "unauthenticated"),
    # readings the seventh batch's dev layers added
    ("Blocked by blocklist: https://ads.example.net/t.js", "permission_denied"),
    ("Comment 7 was written by another user; only its author can delete it.", "permission_denied"),
    ("Board 42 was archived or no longer exists", "not_found"),
    ('Tool "export_pdf" is not available in this session.', "not_found"),
    ("The element did not become clickable within the configured timeout.", "upstream_timeout"),
    ("API request failed (404) for GET /v2/runs/1", "not_found"),
    ("Request failed with status code 423", "failed_precondition"),
    ("Filtered output exceeds 256 KiB; narrow the filter.", "payload_too_large"),
    ("Could not extract issue ID from URL.", "validation_error"),
    ("Ignore options can only be used when status is ignored", "validation_error"),
    ("Multiple users found for name 'dana'. Pass the user id instead.", "validation_error"),
    ("Error: no active trace recording to stop.", "failed_precondition"),
    ("Error: net::ERR_NAME_NOT_RESOLVED at https://x.example", "upstream_unavailable"),
    ("A transient SSL error occurred after 3 attempts.", "upstream_unavailable"),
    ("Rejected the stored access token for this session. Please re-authorize to continue.", "unauthenticated"),
    # readings the eighth batch's dev layers added; a cause named after the first sentence still decides
    ("No active astro context. Run `astro login` to authenticate.", "unauthenticated"),
    ("Cortex Search Error: An authorization error occurred.\n\nError Message: Invalid OAuth access token.",
     "unauthenticated"),
    ("Failed to list filters: Request had insufficient authentication scopes.", "permission_denied"),
    ("Failed to find label: Backend Error", "upstream_unavailable"),
    ("Please specify a database + schema.", "validation_error"),
    ("Error executing query: No active warehouse selected in the current session.", "failed_precondition"),
    ("Mail service not enabled", "failed_precondition"),
    ("PDF file appears to be corrupted or unreadable", "unsupported_input"),
    ("Could not connect to MongoDB. Last error: Authentication failed.", "unauthenticated"),
    ("grep command not found. Install grep to use this tool.", "not_implemented"),
])
def test_the_reading_a_family_was_written_for_stays(text: str, served: str) -> None:
    assert _served(text) == served
