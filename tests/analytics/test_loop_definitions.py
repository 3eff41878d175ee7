"""The loop definitions in plain Python, cross-checking the SQL models field by field on generated sessions."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shadow.analytics import _report as report
from shadow.analytics._warehouse import Warehouse
from shadow.calllog import _tables as tables

T0 = dt.datetime(2025, 3, 14, 9, 0, 0)
RETRYABLE = {"rate_limited": True, "upstream_timeout": True, "validation_error": False, "not_found": False}


@dataclass
class Event:
    """A generated call or mark, before it becomes a row."""

    id: str
    session_id: str
    seq: int
    ts: dt.datetime
    kind: str  # "call" or a mark kind
    row: dict[str, Any]


# --- the definitions, as a reviewer would write them ------------------------------------------------------------


def top_field(arg_hashes: dict[str, str] | None, field: str) -> str:
    """The argument a field names: itself when an argument has that name, else its top-level part."""
    if arg_hashes is not None and field in arg_hashes:
        return field
    found = re.match(r"^[^.\[]+", field)
    return found.group(0) if found else ""


def position(row: dict[str, Any]) -> tuple[tuple[bool, int], int]:
    """Where an event sits in its session: its counter epoch (rows without one first), then its seq."""
    return (row["epoch"] is not None, row["epoch"] or 0), row["seq"]


def reference_followups(calls: list[dict[str, Any]], marks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each error's follow-up facts, straight from the README's definitions."""
    out: dict[str, dict[str, Any]] = {}
    sessions = {c["session_id"] for c in calls}
    for sid in sessions:
        used = sorted({position(c) for c in calls if c["session_id"] == sid}
                      | {position(m) for m in marks if m["session_id"] == sid})
        events = [(*position(c), 0, c["id"], c) for c in calls if c["session_id"] == sid]
        events += [(*position(m), 1, m["id"], m) for m in marks
                   if m["session_id"] == sid and m["kind"] in ("user_turn", "end")]
        events.sort(key=lambda e: e[:4])  # epoch, seq, calls before marks, then the id breaks ties
        order = [e for e in events if e[2] == 0]
        for i, (*_pos, c) in enumerate(order):
            if c["outcome"] != "error":
                continue
            at = next(k for k, e in enumerate(events) if e[2] == 0 and e[3] == c["id"])
            nxt = order[i + 1][4] if i + 1 < len(order) else None
            first = events[at + 1] if at + 1 < len(events) else None
            same = nxt is not None and nxt["tool"] == c["tool"] and nxt["fingerprint"] == c["fingerprint"]
            # records are missing right after the error: the next position used is not seq + 1 in its epoch,
            # nor seq 1 of a later epoch (a counter started anew)
            later = [q for q in used if q > position(c)]
            gap = bool(later) and later[0][1] > (c["seq"] + 1 if later[0][0] == position(c)[0] else 1)
            if gap:
                follow = "unknown"
                same = False
            elif first is None:
                follow = "nothing"
            elif first[2] == 1:
                follow = "end" if first[4]["kind"] == "end" else "user_turn"
            elif same:
                follow = "repeat"
            elif first[4]["tool"] == c["tool"]:
                follow = "repair"
            else:
                follow = "other_tool"
            marks_between = False
            if nxt is not None:
                at_next = next(k for k, e in enumerate(events) if e[2] == 0 and e[3] == nxt["id"])
                marks_between = any(e[2] == 1 for e in events[at + 1:at_next])
            length = 0
            if same:
                for *_rest, after in order[i + 1:]:
                    if after["tool"] != c["tool"] or after["fingerprint"] != c["fingerprint"]:
                        break
                    length += 1
            justified = same and c["retryable"] is True
            delta_us = None if nxt is None else int((nxt["ts"] - c["ts"]) / dt.timedelta(microseconds=1))
            named = c["code"] == "validation_error" and c["error_field"] is not None and follow == "repair"
            field = top_field(c["arg_hashes"], c["error_field"]) if named else None
            changed = None
            if named and c["arg_hashes"] is not None and nxt is not None and nxt["arg_hashes"] is not None:
                changed = c["arg_hashes"].get(field) != nxt["arg_hashes"].get(field)
            out[c["id"]] = {
                "session_id": sid, "tool": c["tool"], "variant": c["variant"], "code": c["code"],
                "follow_up": follow, "looped": same, "back_to_back": same and not marks_between,
                "loop_length": length, "justified_retry": justified,
                "ms_to_next_call": None if delta_us is None else delta_us // 1000,
                "waited_retry_after": (delta_us >= c["retry_after_ms"] * 1000
                                       if justified and c["retry_after_ms"] is not None else None),
                "repair_field": field, "repair_field_changed": changed,
                "next_call_id": None if nxt is None else nxt["id"],
            }
    return out


def reference_missing(calls: list[dict[str, Any]], marks: list[dict[str, Any]]) -> dict[str, int]:
    """Per session, the seqs missing in its counters: each epoch's seqs run 1, 2, ... with none skipped."""
    used: dict[str, dict[Any, set[int]]] = {}
    for row in (*calls, *marks):
        used.setdefault(row["session_id"], {}).setdefault(row["epoch"], set()).add(row["seq"])
    return {sid: sum(max(seqs) - len(seqs) for seqs in epochs.values()) for sid, epochs in used.items()}


# --- generated sessions ---------------------------------------------------------------------------------------

tools_ = st.sampled_from(["search", "create_task", "send_mail"])
fingerprints = st.sampled_from(["f1", "f2", "f3"])
writers = st.sampled_from([0, 0, 0, 1])  # two processes writing one session, each with its own counter
hashes = st.none() | st.dictionaries(st.sampled_from(["due", "title", "items"]), st.sampled_from(["h1", "h2"]),
                                     max_size=3)


@st.composite
def call_spec(draw: st.DrawFn) -> dict[str, Any]:
    error = draw(st.booleans())
    code = draw(st.sampled_from(sorted(RETRYABLE))) if error else None
    return {
        "kind": "call", "tool": draw(tools_), "fingerprint": draw(fingerprints), "arg_hashes": draw(hashes),
        "outcome": "error" if error else "ok", "code": code,
        "retryable": (RETRYABLE[code] if draw(st.booleans()) else None) if code else None,
        "retry_after_ms": draw(st.none() | st.integers(0, 3000)) if code else None,
        "error_field": draw(st.none() | st.sampled_from(["due", "items[0].due", "title.text", "[0]"]))
        if code == "validation_error" else None,
        "variant": draw(st.sampled_from(["legacy", "structured"])),
        "unmapped": draw(st.booleans()) if error else False,
        "gap_ms": draw(st.integers(0, 4000)),
        "tie": draw(st.booleans()), "id_key": draw(st.integers(0, 9)), "writer": draw(writers),
    }


event_spec = st.one_of(
    call_spec(), call_spec(), call_spec(),
    st.fixed_dictionaries({"kind": st.sampled_from(["user_turn", "end", "note"]), "gap_ms": st.integers(0, 4000),
                           "tie": st.booleans(), "id_key": st.integers(0, 9), "writer": writers}),
    st.fixed_dictionaries({"kind": st.just("lost"), "gap_ms": st.integers(0, 4000),  # a record deleted
                           "writer": writers}),
    # a writer's counter started anew (a process restarted, or its counter evicted): seq 1 under a new epoch,
    # which may be lower than another writer's (the epoch orders, not the time of writing)
    st.fixed_dictionaries({"kind": st.just("restart"), "gap_ms": st.just(0), "writer": writers,
                           "epoch": st.integers(1, 9).map(lambda k: k * 100)}),
)
sessions_spec = st.lists(st.lists(event_spec, min_size=1, max_size=14), min_size=1, max_size=4)


def build(sessions: list[list[dict[str, Any]]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    calls: list[dict[str, Any]] = []
    marks: list[dict[str, Any]] = []
    for s, events in enumerate(sessions):
        ts = T0 + dt.timedelta(hours=s)
        # each writer's counter: [epoch, last seq]; rows without an epoch (written before it existed) in even sessions
        counters = {0: [None if s % 2 == 0 else 50, 0], 1: [70, 0]}
        for i, e in enumerate(events, start=1):
            ts += dt.timedelta(milliseconds=e["gap_ms"])
            counter = counters[e.get("writer", 0)]
            if e["kind"] == "restart":
                counter[:] = [e["epoch"] + i, 0]  # + i: every counter gets its own epoch
                continue
            # "tie": the same seq as the event before (two writers sharing a session id); then the id decides,
            # and "id_key" makes id order differ from write order
            counter[1] = counter[1] if e.get("tie") and counter[1] else counter[1] + 1
            base = {"id": f"{s:02d}-{e.get('id_key', 0)}-{i:03d}", "session_id": f"session-{s}", "seq": counter[1],
                    "ts": ts, "process": "p", "host": "h", "source": "live", "inserted_at": T0, "epoch": counter[0],
                    "flag_source": None, "rules_fingerprint": None}
            if e["kind"] == "lost":
                continue  # its seq stays unused: a gap, as a dropped record or a crashed process leaves
            if e["kind"] != "call":
                marks.append({**base, "kind": e["kind"]})
                continue
            calls.append({**base, "tool": e["tool"], "mode": "cutover", "variant": e["variant"],
                          "fingerprint": e["fingerprint"], "arg_hashes": e["arg_hashes"], "args": None,
                          "outcome": e["outcome"], "legacy_payload": None, "new_payload": None, "code": e["code"],
                          "retryable": e["retryable"], "next_action": None, "retry_after_ms": e["retry_after_ms"],
                          "error_field": e["error_field"], "rule": None, "unmapped": e["unmapped"],
                          "schema_valid": True, "latency_us": 1000 + i})
    return calls, marks


def load(calls: list[dict[str, Any]], marks: list[dict[str, Any]]) -> Warehouse:
    wh = Warehouse.in_memory()
    for table, rows in ((tables.calls, calls), (tables.marks, marks)):
        names = [c.name for c in table.columns]
        if rows:
            placeholders = ", ".join("?" for _ in names)
            wh.con.executemany(
                f"INSERT INTO {table.name} VALUES ({placeholders})",
                [[json.dumps(r[n]) if n in ("arg_hashes", "args", "legacy_payload", "new_payload")
                  and r[n] is not None else r[n] for n in names] for r in rows],
            )
    wh.derive()
    return wh


FIELDS = ("session_id", "tool", "variant", "code", "follow_up", "looped", "back_to_back", "loop_length",
          "justified_retry", "ms_to_next_call", "waited_retry_after", "repair_field", "repair_field_changed",
          "next_call_id")


def sql_followups(wh: Warehouse) -> dict[str, dict[str, Any]]:
    cur = wh.con.execute(f"SELECT id, {', '.join(FIELDS)} FROM error_followups")
    return {row[0]: dict(zip(FIELDS, row[1:], strict=True)) for row in cur.fetchall()}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions_spec)
def test_sql_followups_match_the_definitions_field_by_field(sessions: list[list[dict[str, Any]]]) -> None:
    calls, marks = build(sessions)
    wh = load(calls, marks)
    expected = reference_followups(calls, marks)
    got = sql_followups(wh)
    assert set(got) == set(expected)
    for error_id, facts in expected.items():
        for name in FIELDS:
            assert got[error_id][name] == facts[name], (error_id, name)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions_spec)
def test_report_arm_totals_match_the_definitions(sessions: list[list[dict[str, Any]]]) -> None:
    calls, marks = build(sessions)
    wh = load(calls, marks)
    facts = reference_followups(calls, marks)
    result = report.loop_rate_report(wh, resamples=50)
    for arm in result.variants:
        every = [f for f in facts.values() if f["variant"] == arm.variant]
        mine = [f for f in every if f["follow_up"] != "unknown"]  # the loop rate's denominator
        loops = [f for f in mine if f["looped"]]
        assert arm.calls == sum(1 for c in calls if c["variant"] == arm.variant)
        assert arm.errors == len(mine)
        assert arm.loops == len(loops)
        assert arm.back_to_back_loops == sum(1 for f in loops if f["back_to_back"])
        assert arm.justified_retries == sum(1 for f in mine if f["justified_retry"])
        assert arm.justified_retries_waited == sum(1 for f in mine if f["waited_retry_after"])
        assert dict(arm.follow_ups) == {k: Counter(f["follow_up"] for f in every)[k] for k in report.FOLLOW_UPS}
        assert arm.codes == dict(Counter(f["code"] for f in mine))
        if loops:
            assert arm.mean_loop_length == sum(f["loop_length"] for f in loops) / len(loops)
            assert arm.loop_rate == len(loops) / len(mine)
        changed = [f["repair_field_changed"] for f in mine if f["repair_field"] is not None]
        assert dict(arm.field_repairs) == {"changed": changed.count(True), "unchanged": changed.count(False),
                                           "unknown": changed.count(None)}
    assert {v.variant for v in result.variants} == {c["variant"] for c in calls}
    missing = reference_missing(calls, marks)
    assert result.data_range.sessions_with_gaps == sum(1 for sid in {c["session_id"] for c in calls} if missing[sid])
    assert result.health is not None
    assert (result.health.sessions, result.health.sessions_with_gaps, result.health.missing_records) == (
        len(missing), sum(1 for n in missing.values() if n), sum(missing.values()))


def test_a_loop_after_a_user_turn_is_a_loop_but_not_back_to_back() -> None:
    calls, marks = build([[
        {"kind": "call", "tool": "search", "fingerprint": "f1", "arg_hashes": None, "outcome": "error",
         "code": "not_found", "retryable": False, "retry_after_ms": None, "error_field": None,
         "variant": "legacy", "unmapped": False, "gap_ms": 0},
        {"kind": "user_turn", "gap_ms": 10},
        {"kind": "call", "tool": "search", "fingerprint": "f1", "arg_hashes": None, "outcome": "ok",
         "code": None, "retryable": None, "retry_after_ms": None, "error_field": None,
         "variant": "legacy", "unmapped": False, "gap_ms": 10},
    ]])
    row = next(iter(sql_followups(load(calls, marks)).values()))
    assert (row["follow_up"], row["looped"], row["back_to_back"], row["loop_length"]) == ("user_turn", True,
                                                                                           False, 1)


def test_a_repair_of_the_named_field_is_told_apart_from_one_that_left_it() -> None:
    def err(hashes: dict[str, str], gap: int = 0) -> dict[str, Any]:
        return {"kind": "call", "tool": "create_task", "fingerprint": f"fp-{sorted(hashes.items())}",
                "arg_hashes": hashes, "outcome": "error", "code": "validation_error", "retryable": False,
                "retry_after_ms": None, "error_field": "due", "variant": "structured", "unmapped": False,
                "gap_ms": gap}

    calls, marks = build([
        [err({"due": "h1", "title": "h1"}), err({"due": "h2", "title": "h1"})],  # fixed the field
        [err({"due": "h1", "title": "h1"}), err({"due": "h1", "title": "h2"})],  # changed something else
    ])
    rows = sql_followups(load(calls, marks))
    firsts = {r["session_id"]: r for k, r in rows.items() if k.endswith("-001")}
    assert firsts["session-0"]["repair_field_changed"] is True
    assert firsts["session-1"]["repair_field_changed"] is False
    assert firsts["session-0"]["follow_up"] == firsts["session-1"]["follow_up"] == "repair"


def _call(tool: str, fp: str, outcome: str, gap: int = 10) -> dict[str, Any]:
    return {"kind": "call", "tool": tool, "fingerprint": fp, "arg_hashes": None, "outcome": outcome,
            "code": "not_found" if outcome == "error" else None, "retryable": False if outcome == "error" else None,
            "retry_after_ms": None, "error_field": None, "variant": "legacy", "unmapped": False, "gap_ms": gap}


def test_an_error_followed_by_deleted_records_has_an_unknown_follow_up_left_out_of_the_loop_rate() -> None:
    calls, marks = build([
        [_call("search", "f1", "error"), _call("search", "f1", "error"), _call("search", "f2", "ok"),
         _call("create_task", "c1", "error"), _call("create_task", "c1", "ok"), _call("search", "f9", "ok")],
        [_call("search", "f1", "error"), _call("search", "f1", "ok")],
    ])
    wh = load(calls, marks)
    assert sql_followups(wh)["00-0-002"]["follow_up"] == "repair"
    # Delete records from the log, as a drop or a crash would: the seq after two errors goes missing.
    wh.con.execute("DELETE FROM calls WHERE id IN ('00-0-003', '00-0-005')")
    wh.derive()
    rows = sql_followups(wh)
    assert rows["00-0-001"]["follow_up"] == "repeat"  # the record right after it is there
    assert (rows["00-0-002"]["follow_up"], rows["00-0-002"]["looped"]) == ("unknown", False)
    assert (rows["00-0-004"]["follow_up"], rows["00-0-004"]["looped"]) == ("unknown", False)
    assert rows["01-0-001"]["follow_up"] == "repeat"
    result = report.loop_rate_report(wh, resamples=50)
    (arm,) = result.variants
    assert arm.follow_ups["unknown"] == 2
    assert arm.errors == 2 and arm.loops == 2 and arm.loop_rate == 1.0  # the unknowns are not in the denominator
    assert result.data_range.sessions_with_gaps == 1
    assert result.to_dict()["data_range"]["sessions_with_gaps"] == 1
    from shadow.analytics._render import render_table

    assert "1 sessions have gaps" in render_table(result)


_RESTART = {"kind": "restart", "gap_ms": 0, "epoch": 200}
#: Two sessions whose counters restart under a new epoch, with a record lost in the new epoch of each.
RESTART_SESSIONS = [
    # epoch 1: six calls; the restarted counter's seq 2 is lost, which epoch 1's own seq 2 must not hide
    [_call("search", "f1", "error"), *[_call("search", "f1", "ok")] * 4, _call("create_task", "c1", "error"),
     _RESTART, _call("create_task", "c1", "error"), {"kind": "lost", "gap_ms": 0}, _call("create_task", "c1", "ok")],
    # a clean restart right after an error: what followed it is the new counter's seq 1, no gap
    [_call("search", "f1", "ok"), _call("search", "f1", "ok"), _call("create_task", "c1", "error"),
     _RESTART, _call("create_task", "c2", "ok"), _call("search", "f2", "ok"), _call("search", "f3", "ok"),
     {"kind": "lost", "gap_ms": 0}, _call("search", "f4", "ok")],
]


def test_a_counter_restarted_under_a_new_epoch_is_neither_a_gap_nor_a_hiding_place_for_one() -> None:
    calls, marks = build(RESTART_SESSIONS)
    wh = load(calls, marks)
    rows = sql_followups(wh)
    assert rows["00-0-006"]["follow_up"] == "repeat"  # the last of epoch 1, then seq 1 of the next: no gap
    assert (rows["00-0-008"]["follow_up"], rows["00-0-008"]["looped"]) == ("unknown", False)
    assert rows["01-0-003"]["follow_up"] == "repair"  # not taken for a gap by the next epoch's missing seq 4
    assert {k: v["follow_up"] for k, v in rows.items()} == {
        k: v["follow_up"] for k, v in reference_followups(calls, marks).items()}
    result = report.loop_rate_report(wh, resamples=50)
    assert result.variants[0].follow_ups["unknown"] == 1
    assert result.data_range.sessions_with_gaps == 2
    assert result.health is not None
    assert (result.health.sessions_with_gaps, result.health.missing_records) == (2, 2)


def test_two_processes_writing_one_session_leave_no_gap_when_nothing_is_lost() -> None:
    def on(writer: int, call: dict[str, Any]) -> dict[str, Any]:
        return {**call, "writer": writer}

    # two processes interleave in time, each with its own counter (epoch): seqs 1, 2, 3 and 1, 2
    calls, marks = build([[on(0, _call("search", "f1", "error")), on(1, _call("search", "f1", "error")),
                           on(0, _call("search", "f1", "ok")), on(1, _call("send_mail", "m1", "error")),
                           on(0, _call("create_task", "c1", "error"))]])
    wh = load(calls, marks)
    rows = sql_followups(wh)
    assert "unknown" not in {r["follow_up"] for r in rows.values()}
    assert {k: v["follow_up"] for k, v in rows.items()} == {
        k: v["follow_up"] for k, v in reference_followups(calls, marks).items()}
    assert report.loop_rate_report(wh, resamples=50).data_range.sessions_with_gaps == 0
