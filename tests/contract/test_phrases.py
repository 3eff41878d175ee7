"""The phrase table: what an error text reads as, with URLs and paths masked, through the built-in rules."""

from __future__ import annotations

import pytest

import shadow
from shadow.contract._codes import Code
from shadow.contract._phrases import mask_locations, propose


@pytest.mark.parametrize(("text", "code"), [
    ("No changes staged for commit", Code.FAILED_PRECONDITION),
    ("HEAD is detached, so there is no current branch", Code.FAILED_PRECONDITION),
    ("nothing to commit, working tree clean", Code.FAILED_PRECONDITION),
    ("Your local changes to the following files would be overwritten by checkout", Code.FAILED_PRECONDITION),
    ("Invalid time: 02:30 does not exist in Europe/Berlin on 2027-03-28 (skipped by a clock change)",
     Code.VALIDATION_ERROR),
    ("the date 2026-02-30 does not exist", Code.VALIDATION_ERROR),
    ('column "emial" does not exist', Code.VALIDATION_ERROR),
    ("user 42 does not exist", Code.NOT_FOUND),
    ("Ref 'x' did not resolve to an object", Code.NOT_FOUND),
    ("fatal: no such ref: origin/nope", Code.NOT_FOUND),
    ("no such branch 'dev'", Code.NOT_FOUND),
    ("ConnectError('[Errno -2] Name or service not known')", Code.UPSTREAM_UNAVAILABLE),
    ("connection to server failed: Connection refused", Code.UPSTREAM_UNAVAILABLE),
    ("connect ECONNREFUSED 127.0.0.1:5432", Code.UPSTREAM_UNAVAILABLE),
    ("connect ETIMEDOUT 10.0.0.1:443", Code.UPSTREAM_TIMEOUT),
    ("Request cancelled", Code.CANCELLED),
    ("502 Bad Gateway", Code.UPSTREAM_UNAVAILABLE),
])
def test_each_phrase_reads_as_its_code(text: str, code: Code) -> None:
    found = propose(text)
    assert found is not None and found.code is code


def test_urls_and_paths_are_masked_before_reading() -> None:
    assert mask_locations("see https://a.invalid/x?q=1 and /srv/not-found/a.txt") == "see <url> and <path>"
    found = propose("Failed to fetch https://api.invalid/not-found: RemoteProtocolError('Server disconnected')")
    assert found is not None and found.code is Code.UPSTREAM_UNAVAILABLE


def test_the_built_in_rules_read_prefixed_and_status_line_texts_as_errors() -> None:
    rules = shadow.Rules.default()
    for text, code in [("Database error: no such table: t", "not_found"), ("413 Request Entity Too Large",
                                                                          "payload_too_large")]:
        found = rules.translate_result(text)
        assert found is not None and found.error.code.value == code
    assert rules.translate_result("502 items were moved") is None  # a count, not a status line
    assert rules.translate_result("nothing to commit, working tree clean") is None  # plain output: a user rule decides
