"""Which plain strings a tool returns read as errors: failure openings and first clauses, never success data."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shadow.calllog._plain import never_an_error
from shadow.contract import Rules, looks_like_error

ERRORS = [
    "Error: no seats left on train 4411",
    "**Error:** Cannot initiate the OAuth flow",
    "\u274c Could not connect to the database",
    "## Failed to open workbook budget.xlsx",
    "API request failed with status 500: upstream returned an empty body",
    "Sheet 'Q3' not found",
    "File 'Mailer.gs' not found in project 1Qx7rTz0bW4k",
    "Command timed out after 30 seconds",
    "Email body cannot be empty.",
    "No URL provided",
    "Please provide a query to search for",
    "Unable to parse the date 'next friday'",
    "An unexpected error occurred while saving the note",
    "Invalid source_type: amazon_reviews. Valid options are: amazon_product, walmart_product",
    "Unsupported search engine: duckduckgo. Use 'google' or 'bing'",
    "Only single statements are supported",
    "Permission denied: /srv/hr/contract.pdf",
    "Security violation: command 'curl' is not allowed",
    "Unauthorized",
    "Timeout after 600 seconds waiting for the report",
    "502 Bad Gateway",
    "Execution failed\nFunction: sendInvoices\nError: ScriptError",
    "Directory drafts does not exist",
    "Table 'shop.orders' doesn't exist",
    "Invalid paragraph index. Document has 6 paragraphs (0-5).",
    '{"error": "Invalid paragraph index: 40"}',
    '{\n  "success": false,\n  "message": "Quota used up for today"\n}',
    "Missing required parameter: query",
    "No such file or directory: notes/x.txt",
    "Rate limit exceeded. Try again in 20 seconds.",
    "Authentication required",
    "Connection refused",
    "The file could not be opened because it is locked by another user.",
    "Paragraph index 9 is out of range (document has 5 paragraphs)",
    "Could not connect to Zotero.\nMake sure Zotero is running and its local API is enabled.",
    "Session expired, please log in again",
    "Query is required",
    "Value must be a positive integer",
    "Bad request: missing 'to' address",
    "Tool 'foo' is not available",
    "SQLite DatabaseError: UNIQUE constraint failed: customers.email",  # an exception's class name opens it
    "OperationalError: no such table: custmers\nSuggestion: did you mean `customers`?",
    "SQLite ProgrammingError (Parameter/Syntax): Incorrect number of bindings supplied",
    "HTTPError: 404 Client Error: Not Found for url",
    "KeyError('nme')",  # an exception's repr as the whole text (LangChain's JSON and Python REPL tools)
    "ZeroDivisionError('division by zero')",
    "requests.exceptions.ConnectionError(MaxRetryError('Max retries exceeded with url: /x'))",
]

SUCCESSES = [
    "No results found for 'pricing'",
    "No rows returned",
    "Query executed successfully. Rows affected: 3",
    "Successfully created sheet 'Q3'",
    "Found 2 comments:\n- Priya: looks good\n- Sam: not found in the ledger, check",
    "2 tests failed, 8 passed",
    "Ran 10 tests: 2 failed",
    "Invalid rows: 3\nValid rows: 97",
    "Invalid rows: 3",
    "Unauthorized access attempts: 3",
    "Sheet 'Q3' not found in the cache, so it was loaded\nRows: 120\nColumns: 8",
    "Recent executions:\n1. sendInvoices\n   Status: FAILED",
    "The capital of France is Paris.",
    "",
    "   ",
    "**",
    '{"error": null, "items": []}',
    "Tests that do not exist are skipped",
    "Invalid arguments are ignored by the parser.",
    "Failed jobs: 0",
    "Failed login attempts in the last 24h: 3",
    "Error rate: 0.2% (last hour)",
    "Could not find any matching documents.",
    '{"results": [], "error": null}',
    '{"status": "ok", "data": {"error": "a field of the data"}}',
    '{"error": "not JSON at all',
    "Terror: a novel by Dan Simmons",  # not a class name: lowercase "error"
    "ErrorBudget: 5 minutes left this month",
    "ValueError(x) is what the parser raises for a bad date.",  # names an exception, is not its repr
    "KeyError('a')\nKeyError('b')",  # a report of two
]


@pytest.mark.parametrize("text", ERRORS)
def test_a_text_that_opens_as_a_failure_reads_as_an_error(text: str) -> None:
    assert looks_like_error(text)


@pytest.mark.parametrize("text", SUCCESSES)
def test_empty_results_counts_and_reports_stay_success_data(text: str) -> None:
    assert not looks_like_error(text)


@pytest.mark.parametrize("text", ERRORS + SUCCESSES)
def test_the_writers_fast_path_agrees_with_the_rules_on_every_text(text: str) -> None:
    assert never_an_error(text) is (not looks_like_error(text))


def test_a_marker_less_error_is_served_in_the_authors_words_with_the_code_its_words_give() -> None:
    found = Rules.default().translate_result("Sheet 'Q3' not found")
    assert found is not None
    assert (found.error.code.value, found.error.message) == ("not_found", "Sheet 'Q3' not found")


def test_a_driver_error_returned_as_text_keeps_its_words_and_the_code_they_give() -> None:
    found = Rules.default().translate_result("SQLite DatabaseError: UNIQUE constraint failed: customers.email")
    assert found is not None and found.error.code.value == "already_exists"
    assert found.error.message == "SQLite DatabaseError: UNIQUE constraint failed: customers.email"
    # a taken key: the row there may not be the one the user meant (LangChain's SQL tool inserting 'Cy' with Ada's
    # email), so the model changes the key or asks; "already exists, work done, stop" would mislead it
    assert found.error.next_action.value == "ask_user"
    assert Rules.default().translate_result("Error: File already exists: a.txt").error.next_action.value == "stop"  # type: ignore[union-attr]


def test_a_json_error_object_returned_as_text_is_read_by_its_message() -> None:
    found = Rules.default().translate_result('{"error": {"code": 404, "message": "Document memo.docx not found"}}')
    assert found is not None
    assert (found.error.code.value, found.error.message) == ("not_found", "Document memo.docx not found")


@given(st.text(max_size=300))
def test_reading_any_text_never_raises(text: str) -> None:
    assert looks_like_error(text) in (True, False)
    assert never_an_error(text) is (not looks_like_error(text))


@given(st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=200))
def test_one_line_that_opens_with_could_not_is_an_error_whatever_follows(rest: str) -> None:
    assert looks_like_error("Could not " + rest)


def test_a_report_whose_first_line_names_a_failure_is_data_unless_a_later_line_is_an_error() -> None:
    report = "Sheet 'Q3' not found\n" + "\n".join(f"row {i}: ok" for i in range(200))
    assert not looks_like_error(report)
    assert looks_like_error(report + "\nError: the export stopped at row 200")
