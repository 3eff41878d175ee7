"""``Rules.text_as_data()``: a tool whose result is a document's own text is never served an error for its words."""

from __future__ import annotations

from pathlib import Path

import shadow
from shadow.contract import Rules
from shadow.testing import InMemoryFlags, InMemoryStore, recording

MEMO = "Please provide your feedback on the Q3 draft by Friday."


def test_a_returned_string_is_data_whatever_it_opens_with() -> None:
    rules = Rules.default().text_as_data()
    for text in (MEMO, "Unable to attend? The recording is on the intranet.", "Error budget: 0.1% per 30 days",
                 b"Could not be happier with the results"):
        assert rules.translate_result(text) is None
    assert Rules.default().translate_result(MEMO) is not None  # the default reads it as an error


def test_error_objects_exceptions_and_your_own_text_rules_are_read_as_before() -> None:
    rules = Rules.default().on_result(r"^Timeout", "upstream_timeout").text_as_data()
    found = rules.translate_result({"error": "Document missing.docx not found"})
    assert found is not None and found.error.code.value == "not_found"
    timed_out = rules.translate_result("Timeout while reading the file")
    assert timed_out is not None and timed_out.error.code.value == "upstream_timeout"
    assert rules.translate_exception(TimeoutError("slow")).error.code.value == "upstream_timeout"


def test_the_setting_survives_every_way_of_extending_the_rules_and_changes_the_fingerprint() -> None:
    base = Rules.default().text_as_data()
    extended = [base.on(KeyError, "not_found"), base.shown(LookupError), base.on_result("^x", "conflict"),
                base + Rules.empty(), Rules.empty() + base, base.without_defaults()]
    assert all(rules.text_is_data for rules in extended)
    assert base.fingerprint != Rules.default().fingerprint
    assert base.fingerprint == Rules.default().text_as_data().fingerprint


def test_a_shadowed_tool_with_it_logs_its_text_as_success() -> None:
    flags = InMemoryFlags()
    flags.set("read_doc", "shadow")

    @shadow.tool(rules=Rules.default().text_as_data(), flags=flags)
    def read_doc(name: str) -> str:
        return MEMO

    @shadow.tool(flags=flags, name="read_doc_default")
    def read_doc_default(name: str) -> str:
        return MEMO

    flags.set("read_doc_default", "shadow")
    with recording(InMemoryStore()) as store:
        assert read_doc("memo.docx") == MEMO and read_doc_default("memo.docx") == MEMO
        assert shadow.flush(30)
        assert isinstance(store, InMemoryStore)
        outcomes = {r.tool: r.outcome for r in store.records.values() if hasattr(r, "outcome")}
    assert outcomes == {"read_doc": "ok", "read_doc_default": "error"}


def test_a_shadowed_tool_with_it_stores_its_text_as_success_in_sqlite(tmp_path: Path) -> None:
    from sqlalchemy import create_engine, text

    from shadow.calllog import SqlStore

    flags = InMemoryFlags()
    flags.set("read_doc", "shadow")

    @shadow.tool(rules=Rules.default().text_as_data(), flags=flags)
    def read_doc(name: str) -> str:
        return MEMO

    url = f"sqlite:///{tmp_path}/calls.db"
    with recording(SqlStore(url)):
        assert read_doc("memo.docx") == MEMO
        assert shadow.flush(30)
    engine = create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT outcome FROM calls")).scalars().all() == ["ok"]
    engine.dispose()


def test_a_pattern_of_your_own_still_reads_the_tools_own_error_texts() -> None:
    rules = Rules.default().on_result(r"^Error: ", None).text_as_data()  # the recipe in cutover-errors.md
    found = rules.translate_result("Error: invalid base64 input")
    assert found is not None and (found.error.code.value, found.error.message) == ("rejected", "invalid base64 input")
    assert rules.translate_result("Error budget: 0.1% per 30 days") is None
