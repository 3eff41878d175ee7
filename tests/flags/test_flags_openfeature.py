"""The OpenFeature flag source, with the SDK's in-memory provider: targeting by session, TTL, and the audit log."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from openfeature import api
from openfeature.evaluation_context import EvaluationContext
from openfeature.flag_evaluation import FlagResolutionDetails, Reason
from openfeature.provider.in_memory_provider import InMemoryFlag, InMemoryProvider

import shadow
from shadow import _sessions as sessions
from shadow._decorator import tool
from shadow.calllog._records import CallRecord
from shadow.flags._db import DbFlags, FlagState, Mode, Variant
from shadow.flags._openfeature import OpenFeatureFlags
from shadow.testing import InMemoryStore, recording
from shadow.typing import FlagSource


def flag(value: object) -> InMemoryFlag[Any]:
    return InMemoryFlag("only", {"only": value})


def provide(flags: dict[str, InMemoryFlag[Any]], domain: str) -> None:
    api.set_provider(InMemoryProvider(flags), domain=domain)


@pytest.fixture
def domain(request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"shadow-test-{request.node.name}"
    yield name
    api.clear_providers()


def source(domain: str, url: str | None = None, **kwargs: Any) -> OpenFeatureFlags:
    return OpenFeatureFlags(api.get_client(domain), audit_url=url, audit=url is not None, **kwargs)


def in_session(flags: FlagSource, tool_name: str, sid: str) -> FlagState:
    with sessions.session(sid):
        return flags.state(tool_name)


def test_mode_and_percent_come_from_the_named_flags(domain: str) -> None:
    provide({"shadow.search.mode": flag("cutover"), "shadow.search.percent": flag(30),
             "shadow.book.mode": flag("shadow")}, domain)
    flags = source(domain)
    assert isinstance(flags, FlagSource)
    assert in_session(flags, "search", "s-1") == FlagState(Mode.CUTOVER, 30)
    assert in_session(flags, "book", "s-1") == FlagState(Mode.SHADOW, 100)
    assert in_session(flags, "unknown", "s-1") == FlagState(Mode.LEGACY, 100)
    assert flags.flag_names("search") == ("shadow.search.mode", "shadow.search.percent")


def test_the_session_is_the_targeting_key(domain: str) -> None:
    def by_session(_flag: InMemoryFlag[Any], context: EvaluationContext) -> FlagResolutionDetails[Any]:
        value = "cutover" if (context.targeting_key or "").startswith("beta-") else "shadow"
        assert context.attributes == {"tool": "search"}
        return FlagResolutionDetails(value=value, reason=Reason.TARGETING_MATCH)

    provide({"shadow.search.mode": InMemoryFlag("x", {"x": "shadow"}, context_evaluator=by_session)}, domain)
    flags = source(domain)
    assert in_session(flags, "search", "beta-7").mode is Mode.CUTOVER
    assert in_session(flags, "search", "prod-7").mode is Mode.SHADOW


def test_percent_assigns_arms_by_the_sticky_session_bucket(domain: str) -> None:
    provide({"shadow.t.mode": flag("cutover"), "shadow.t.percent": flag(40)}, domain)
    flags = source(domain)
    arms = [in_session(flags, "t", f"s-{i}").variant(f"s-{i}") for i in range(400)]
    share = arms.count(Variant.STRUCTURED) / len(arms)
    assert 0.3 < share < 0.5


def test_the_kill_switch_sends_every_tool_to_legacy(domain: str) -> None:
    provide({"shadow.kill": flag(True), "shadow.t.mode": flag("cutover")}, domain)
    assert in_session(source(domain), "t", "s") == FlagState(Mode.LEGACY, 100)


def test_invalid_values_are_legacy_with_a_warning(domain: str) -> None:
    provide({"shadow.a.mode": flag("turbo"), "shadow.b.mode": flag("cutover"), "shadow.b.percent": flag(150),
             "shadow.c.mode": flag(7)}, domain)
    flags = source(domain)
    for name in ("a", "b", "c"):
        assert in_session(flags, name, "s") == FlagState(Mode.LEGACY, 100)


def test_a_custom_prefix(domain: str) -> None:
    provide({"agents.search.mode": flag("shadow")}, domain)
    assert in_session(source(domain, prefix="agents"), "search", "s").mode is Mode.SHADOW


def test_evaluations_are_cached_and_refreshed_in_the_background(domain: str) -> None:
    provide({"shadow.t.mode": flag("shadow")}, domain)
    flags = source(domain, ttl=0.05)
    assert in_session(flags, "t", "s").mode is Mode.SHADOW
    provide({"shadow.t.mode": flag("cutover")}, domain)
    assert in_session(flags, "t", "s").mode is Mode.SHADOW  # still cached
    time.sleep(0.08)
    assert in_session(flags, "t", "s").mode is Mode.SHADOW  # stale: served while the refresh runs
    assert flags.flush(5)
    assert in_session(flags, "t", "s").mode is Mode.CUTOVER


def test_the_call_path_never_waits_on_an_audit_write(domain: str, sqlite_url: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    provide({"shadow.t.mode": flag("shadow")}, domain)
    flags = source(domain, sqlite_url)
    gate = threading.Event()
    original = flags._record

    def slow_record(*args: Any) -> None:
        gate.wait(5)
        original(*args)

    monkeypatch.setattr(flags, "_record", slow_record)
    started = time.perf_counter()
    assert in_session(flags, "t", "s").mode is Mode.SHADOW
    elapsed = time.perf_counter() - started
    gate.set()
    assert flags.flush(5)
    assert elapsed < 2.5  # the write was blocked on the gate for up to 5 s; the lookup did not wait for it
    assert [e.new_mode for e in DbFlags(sqlite_url).history("t")] == ["shadow"]


def test_flips_observed_are_written_to_the_audit_log_once(domain: str, db_url: str) -> None:
    provide({"shadow.search.mode": flag("shadow")}, domain)
    first, second = source(domain, db_url, ttl=0.0), source(domain, db_url, ttl=0.0)  # two processes, one flip
    for flags in (first, second):
        in_session(flags, "search", "a")
        in_session(flags, "quiet", "a")  # never set: legacy, nothing flipped
        assert flags.flush(5)
    provide({"shadow.search.mode": flag("cutover"), "shadow.search.percent": flag(25)}, domain)
    for flags in (first, second):
        in_session(flags, "search", "b")  # a new session: evaluated now
        assert flags.flush(5)
    history = DbFlags(db_url).history()
    assert [(e.tool, e.old_mode, e.new_mode, e.new_percent) for e in history] == [
        ("search", None, "shadow", 100), ("search", "shadow", "cutover", 25)]
    assert all(e.actor.startswith("openfeature:") and "In-Memory Provider" in (e.reason or "") for e in history)
    states, killed = DbFlags(db_url).states()
    assert states == {"search": FlagState(Mode.CUTOVER, 25)} and not killed


def test_the_kill_switch_flip_is_audited(domain: str, sqlite_url: str) -> None:
    provide({"shadow.t.mode": flag("shadow")}, domain)
    flags = source(domain, sqlite_url, ttl=0.0)
    in_session(flags, "t", "1")
    provide({"shadow.t.mode": flag("shadow"), "shadow.kill": flag(True)}, domain)
    in_session(flags, "t", "2")
    assert flags.flush(5)
    assert [(e.tool, e.new_mode) for e in DbFlags(sqlite_url).history()] == [("t", "shadow"), ("*", "killed")]


def test_the_adapter_follows_openfeature_flags(domain: str) -> None:
    provide({"shadow.lookup.mode": flag("cutover")}, domain)
    memory = InMemoryStore()
    with recording(memory):
        @tool(name="lookup", flags=source(domain))
        def lookup(key: str) -> object:
            return {"error": "no such key"}

        with shadow.session("of-1"):
            payload = lookup("k")
    assert payload["ok"] is False and payload["error"]["code"] == "not_found"
    [record] = [r for r in memory.records.values() if isinstance(r, CallRecord)]
    assert (record.mode, record.variant, record.session_id) == ("cutover", "structured", "of-1")
