"""The reading's order: a status number written in a text decides only when its words do not."""

from __future__ import annotations

import pytest

from shadow.contract._codes import Code
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
