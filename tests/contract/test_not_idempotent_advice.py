"""A non-idempotent tool's service failure never advises the identical call again, in its next action, its message
or the codes paragraph: the call may have taken effect (a booking, a payment)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import shadow
from shadow.calllog._store import SqlStore
from shadow.cli import app
from shadow.contract._payloads import NOT_IDEMPOTENT_ADVICE
from shadow.testing import InMemoryFlags, recording

DOWNGRADED = ("upstream_timeout", "upstream_unavailable")


@pytest.mark.parametrize("code", DOWNGRADED)
def test_the_codes_own_message_loses_its_retry_advice_when_the_tool_is_not_idempotent(code: str) -> None:
    error = shadow.ToolError.of(code, idempotent=False)
    assert "identical call" not in error.message and error.message.endswith(NOT_IDEMPOTENT_ADVICE)
    assert "identical call again" in shadow.ToolError.of(code).message  # an idempotent tool keeps it


def test_a_raised_timeout_of_a_non_idempotent_tool_is_served_without_retry_advice() -> None:
    flags = InMemoryFlags()
    flags.set("book_seat", "cutover")

    @shadow.tool(idempotent=False, flags=flags)
    def book_seat(train: str) -> dict[str, str]:
        raise TimeoutError("booking backend did not answer")

    with recording(shadow.testing.InMemoryStore()):
        error = book_seat("4411")["error"]
    assert (error["code"], error["next_action"], error["retryable"]) == ("upstream_timeout", "ask_user", False)
    assert "identical call" not in error["message"] and "may have taken effect" in error["message"]


def test_a_rules_message_with_retry_advice_is_changed_and_an_authors_own_words_are_not() -> None:
    rules = shadow.Rules.default().on_result(
        r"503", "upstream_unavailable", message="Booking is down. Make the identical call again shortly.")
    drafted = rules.translate_result({"error": "503 from booking"}, idempotent=False)
    assert drafted is not None and drafted.error.message == f"Booking is down. {NOT_IDEMPOTENT_ADVICE}"
    author = shadow.Rules.default().translate_result({"error": "Gateway timed out, try again in a minute"},
                                                     idempotent=False)
    assert author is not None and author.error.message == "Gateway timed out, try again in a minute"


def test_a_fail_downgraded_for_a_non_idempotent_tool_drops_the_advice_too() -> None:
    @shadow.guard(idempotent=False)
    def send_email() -> None:
        raise shadow.Fail("upstream_timeout")

    assert "identical call" not in send_email()["error"]["message"]


def test_describe_lists_service_failures_as_ask_user_for_a_tool_logged_as_not_idempotent(tmp_path: Path) -> None:
    assert "upstream_timeout [ask_user]" in shadow.describe(["upstream_timeout"], idempotent=False)
    assert "upstream_timeout [retry]" in shadow.describe(["upstream_timeout"])
    url = f"sqlite:///{tmp_path}/x.db"
    flags = InMemoryFlags()

    def failing() -> None:
        raise TimeoutError("backend did not answer")

    tools = {"book_seat": shadow.tool(name="book_seat", idempotent=False, flags=flags)(failing),
             "lookup": shadow.tool(name="lookup", flags=flags)(failing)}
    with recording(SqlStore(url)):
        for name, tool in tools.items():
            flags.set(name, "shadow")
            with pytest.raises(TimeoutError):
                tool()
    runner = CliRunner()
    booked = runner.invoke(app, ["describe", "--tool", "book_seat", "--db-url", url])
    assert booked.exit_code == 0, booked.output
    assert "upstream_timeout [ask_user]" in booked.stdout
    looked = runner.invoke(app, ["describe", "--tool", "lookup", "--db-url", url])
    assert "upstream_timeout [retry]" in looked.stdout


def test_describe_takes_not_idempotent_for_a_tool_whose_log_shows_no_service_failure_yet() -> None:
    said = CliRunner().invoke(app, ["describe", "--not-idempotent"])
    assert said.exit_code == 0, said.output
    assert "upstream_timeout [ask_user]" in said.stdout and "upstream_unavailable [ask_user]" in said.stdout
    assert "rate_limited [retry]" in said.stdout  # a 429 did nothing: the identical call is still safe
    assert "upstream_timeout [retry]" in CliRunner().invoke(app, ["describe"]).stdout
