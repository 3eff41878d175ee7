"""Error detection on the labelled texts real tools return: errors read as errors, successes never (dev, held-out)."""

from __future__ import annotations

from tests._returned_texts import detect, entries

DEV, HELDOUT = detect(entries("dev")), detect(entries("heldout"))


def test_the_dev_part_reads_most_returned_errors_and_no_success_as_an_error() -> None:
    # Measured 2026-12-07 on 82 dev errors and 67 successes: before the failure openings 53 read (64.6%), after
    # them 77 (93.9%); no false alarm before or after.
    recall, alarms = DEV.recall, DEV.false_alarms
    assert recall >= 0.939
    assert alarms == 0


def test_the_held_out_part_does_not_fall_below_what_was_measured() -> None:
    # Measured 2026-12-07 on the held-out part, never tuned on (three looks, in tests/fixtures/returned_texts/
    # README.md): 105 of 136 errors read before the failure openings; 118 of 135 (87.4%) after them and the
    # one-message guard, no false alarm among 86 successes.
    # Then "does not exist" and "Invalid <thing>." as a sentence, added after an outside check that ran
    # office-word-mcp-server (a held-out layer) and named those two shapes: 121 of 135 (89.6%); the six held-out
    # layers no check has read stay at 96 of 107 (89.7%), no false alarm.
    # Then common shapes a third outside check (LangGraph and PydanticAI, a tool layer of its own) found read as data
    # ("Missing required parameter: q", "Connection refused", "... is out of range", "... is required") or as
    # errors ("Failed jobs: 0", "Could not find any matching documents."): 122 of 135 (90.4%); the six unread
    # held-out layers 97 of 107 (90.7%); no false alarm.
    # Then an exception's class name as the opening ("SQLite DatabaseError: UNIQUE constraint failed"), from an
    # outside check on fastmcp-sqlite (in neither part): 124 of 135 (91.9%), no false alarm.
    recall, alarms = HELDOUT.recall, HELDOUT.false_alarms  # plain numbers: a failure never prints the misses' ids
    print(f"\nheld-out: {recall:.1%} of errors read, {alarms} false alarms")
    assert recall >= 0.918
    assert alarms == 0
