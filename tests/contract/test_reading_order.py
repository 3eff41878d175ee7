"""The reading's order: a status number written in a text decides only when its words do not."""

from __future__ import annotations

import pytest

import shadow
from shadow.contract._codes import Code, NextAction
from shadow.contract._reading import propose


@pytest.mark.parametrize(("text", "code"), [
    ('API request failed with status 500: {"message": "field \'due_date\' must be a date"}', Code.VALIDATION_ERROR),
    ("Request failed with status code 502: the order ORD-88213 was not found", Code.NOT_FOUND),
    ("HTTP 500: payment method card_88213 has insufficient funds", Code.FAILED_PRECONDITION),
])
def test_the_words_of_a_message_outrank_the_status_number_written_in_it(text: str, code: Code) -> None:
    found = propose(text)
    assert found is not None and found.code is code


@pytest.mark.parametrize(("text", "code"), [
    ("Error: 503", Code.UPSTREAM_UNAVAILABLE),
    ("billing API returned 500", Code.UPSTREAM_UNAVAILABLE),
    ("Request failed with status 404", Code.NOT_FOUND),
    ("Query failed\n Code: 500", Code.UPSTREAM_UNAVAILABLE),
])
def test_a_status_number_still_decides_when_the_words_say_nothing(text: str, code: Code) -> None:
    found = propose(text)
    assert found is not None and found.code is code


@pytest.mark.parametrize(("text", "code"), [
    ("An unknown error occurred while saving: title must not be empty", Code.VALIDATION_ERROR),
    ("HTTP 500 Internal Server Error: payload exceeds 2 MB", Code.PAYLOAD_TOO_LARGE),
    ("HTTP 503 Service Unavailable", Code.UPSTREAM_UNAVAILABLE),  # nothing after the opening: the opening decides
])
def test_a_generic_failure_opening_yields_to_what_follows_it(text: str, code: Code) -> None:
    found = propose(text)
    assert found is not None and found.code is code


@pytest.mark.parametrize(("text", "code"), [
    ("Too many columns selected: at most 50 columns per export", Code.PAYLOAD_TOO_LARGE),  # the call's own input
    ("Error: Too many reservations", Code.QUOTA_EXCEEDED),  # what the account holds
    ("Token lacks the 'repo' scope required to create releases", Code.PERMISSION_DENIED),
    ("Conversion failed: pandoc not found on PATH", Code.NOT_IMPLEMENTED),
])
def test_a_side_word_does_not_decide_against_what_the_message_is_about(text: str, code: Code) -> None:
    found = propose(text)
    assert found is not None and found.code is code


def test_a_throttling_feature_that_is_not_supported_is_no_rate_limit() -> None:
    found = propose("Throttling rules are not supported on the free edition of this dashboard.")
    assert found is None or found.code is not Code.RATE_LIMITED


@pytest.mark.parametrize(("text", "code"), [
    # a client library's typed error with a specific 4xx status: the status names the mistake, not its detail's words
    ("Unexpected error in delete_alias: NotFoundError(404, 'aliases_not_found_exception', 'aliases [x] missing')",
     Code.NOT_FOUND),
    ("AuthorizationException(403, 'security_exception', 'action [indices:admin/delete] is unauthorized for user')",
     Code.PERMISSION_DENIED),
    # 400 is every rejected request's status: the detail decides
    ("BadRequestError(400, 'resource_already_exists_exception', 'index [orders] already exists')",
     Code.ALREADY_EXISTS),
])
def test_a_typed_client_error_is_read_by_its_specific_status(text: str, code: Code) -> None:
    found = propose(text)
    assert found is not None and found.code is code


@pytest.mark.parametrize(("text", "code"), [
    ("No working container tool found. Please install and start Docker or Podman.", Code.NOT_IMPLEMENTED),
    ("Failed to install webkit browser. Please run: npx playwright install webkit.", Code.NOT_IMPLEMENTED),
    ("Failed to parse API response: Unexpected token '<', \"<!DOCTYPE \"... is not valid JSON",
     Code.UPSTREAM_UNAVAILABLE),
    ("Empty search strings are not allowed. Please provide a non-empty string.", Code.VALIDATION_ERROR),
    ("No response wait operation found with ID: orders-api", Code.NOT_FOUND),
    ("page.click: Timeout 30000ms exceeded.", Code.UPSTREAM_TIMEOUT),
    ("Client error '405 Method Not Allowed' for url 'https://es.internal:9200/_cluster/health'",
     Code.UNSUPPORTED_INPUT),
])
def test_the_ninth_batchs_shapes_read_as_what_they_say(text: str, code: Code) -> None:
    found = propose(text)
    assert found is not None and found.code is code


def test_a_list_of_quoted_options_is_masked_as_values() -> None:
    from shadow.contract._masking import mask_locations

    text = 'Section "Pricing" not found. Available sections: "Overview", "Service quotas", "Quotas and limits"'
    assert mask_locations(text) == "Section <value> not found. Available sections: <value>"
    found = propose(text)
    assert found is not None and found.code is Code.NOT_FOUND  # no quota word inside an option decides
    # a JSON object's keys and values, and an exception's arguments, are no list
    assert mask_locations('{"error":"Bad request","code":400}') == '{"error":"Bad request","code":400}'
    assert "already exists" in mask_locations("BadRequestError(400, 'resource_exists', 'index orders already exists')")


def test_an_install_the_user_can_do_before_trying_again_asks_the_user_and_never_stops() -> None:
    error = shadow.Rules.default().translate_result(
        {"error": "npx command not found. Install Node.js and npm, then try again."}).error
    assert error is not None
    assert (error.code, error.next_action) == (Code.FAILED_PRECONDITION, NextAction.ASK_USER)
    assert error.message == "npx command not found. Install Node.js and npm, then try again."


def test_a_bare_status_number_is_served_in_its_codes_own_words() -> None:
    error = shadow.Rules.default().translate_result({"error": "Error: 503"}).error
    assert error is not None and error.code is Code.UPSTREAM_UNAVAILABLE
    assert error.message == shadow.CODE_TABLE[Code.UPSTREAM_UNAVAILABLE].default_message  # not "503"


@pytest.mark.parametrize(("text", "code"), [
    ("Deleting node groups requires --allow-write flag", Code.PERMISSION_DENIED),
    ("No sheet 'Q3' in this workbook. Read the workbook again.", Code.NOT_FOUND),
    ("Row 40 is outside valid range [0, 12]", Code.VALIDATION_ERROR),
    ("Could not connect to http://localhost:8888: the server rejected the token", Code.UNAUTHENTICATED),
    ("row_ids contains duplicate values: [3, 3]", Code.VALIDATION_ERROR),
    ("Bucket logs-2025 cannot be deleted while versioning is enabled", Code.FAILED_PRECONDITION),
    ("Stack web is in UPDATE_ROLLBACK_IN_PROGRESS state and can not be updated", Code.FAILED_PRECONDITION),
    ("Slide 3 is not a chart, so it has no series", Code.UNSUPPORTED_INPUT),
    ("Internal error calling tool: Unknown tool: add_rows", Code.NOT_FOUND),
    ("Model 'm-7' not found on this server, please check whether it already exists with list_models",
     Code.NOT_FOUND),
    ("File conversion failed: the filetype is simply not supported", Code.UNSUPPORTED_INPUT),
])
def test_the_eleventh_batch_phrasings_are_read_by_what_they_mean(text: str, code: Code) -> None:
    found = propose(text)
    assert found is not None and found.code is code, (text, found and found.code)
