"""The report's SQL models against their definitions, written out in Python, on small generated warehouses.

Ties in time, NULL payloads, sequence numbers at or below zero and several counter epochs are what a rewrite of a
model for speed gets wrong first; the definitions here are the ones the models' headers state.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shadow.analytics._warehouse import Warehouse

T0 = dt.datetime(2025, 3, 10, 8, 0)
KINDS = ("repeat", "repair", "other_tool", "user_turn", "end", "nothing")

calls_spec = st.lists(st.fixed_dictionaries({
    "session_id": st.sampled_from(["s0", "s1", "s2", "s3"]),
    "epoch": st.sampled_from([None, 1, 2]),
    "seq": st.integers(-1, 6),
    "ts": st.integers(0, 3).map(lambda m: T0 + dt.timedelta(minutes=m)),  # ties on purpose
    "tool": st.sampled_from(["a", "b"]),
    "variant": st.sampled_from(["legacy", "structured"]),
    "outcome": st.sampled_from(["error", "error", "ok"]),
    "code": st.sampled_from(["x", "y", "z", None]),
    "legacy_payload": st.sampled_from([None, '"p1"', '"p2"']),
    "new_payload": st.sampled_from(['"n1"', '"n2"', '"n3"']),
}), max_size=30)
marks_spec = st.lists(st.tuples(st.sampled_from(["s0", "s1", "s4"]), st.sampled_from([None, 1]),
                                st.integers(-1, 6)), max_size=6)


def warehouse(calls: list[dict[str, Any]], marks: list[tuple[str, int | None, int]]) -> Warehouse:
    wh = Warehouse.in_memory()
    for i, c in enumerate(calls):
        c["id"] = f"c{(i * 7919) % 1000:03d}-{i}"  # ids not in insertion order
    if calls:
        names = [*calls[0]]
        wh.con.executemany(f"INSERT INTO calls ({', '.join(names)}, process, host, latency_us, source) "
                           f"VALUES ({', '.join('?' for _ in names)}, 'p', 'h', 1, 'live')",
                           [[c[n] for n in names] for c in calls])
    if marks:
        wh.con.executemany("INSERT INTO marks (id, session_id, epoch, seq, ts, kind, process, host) "
                           "VALUES (?, ?, ?, ?, ?, 'user_turn', 'p', 'h')",
                           [(f"m{i}", s, e, q, T0) for i, (s, e, q) in enumerate(marks)])
    wh.derive()
    return wh


def evidence_definition(calls: list[dict[str, Any]], max_codes: int, per_code: int) -> list[tuple[Any, ...]]:
    """Per tool, its most frequent codes (ties: by code); per code, the latest error of each distinct legacy
    payload (ties: the smallest id), latest first (ties: the smallest id)."""
    errs = [c for c in calls if c["outcome"] == "error" and c["code"] is not None]
    counts = Counter((c["tool"], c["code"]) for c in errs)
    out = []
    for tool in sorted({t for t, _ in counts}):
        ranked = sorted((code for t, code in counts if t == tool), key=lambda code: (-counts[tool, code], code))
        for code in ranked[:max_codes]:
            latest: dict[str | None, dict[str, Any]] = {}
            for c in errs:
                if (c["tool"], c["code"]) != (tool, code):
                    continue
                seen = latest.get(c["legacy_payload"])
                if seen is None or (c["ts"], _neg(c["id"])) > (seen["ts"], _neg(seen["id"])):
                    latest[c["legacy_payload"]] = c
            examples = sorted(latest.values(), key=lambda c: (-c["ts"].timestamp(), c["id"]))[:per_code]
            out += [(tool, code, counts[tool, code], n, c["legacy_payload"], c["new_payload"])
                    for n, c in enumerate(examples, 1)]
    return sorted(out, key=lambda r: (r[0], -r[2], r[1], r[3]))


def _neg(text: str) -> tuple[int, ...]:
    """An order key that sorts strings backwards (the smaller id wins a tie on the latest time)."""
    return (*(-ord(ch) for ch in text), 0)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls_spec, st.integers(1, 3), st.integers(1, 3))
def test_evidence_is_the_latest_error_of_each_payload_of_the_frequent_codes(
        calls: list[dict[str, Any]], max_codes: int, per_code: int) -> None:
    wh = warehouse(calls, [])
    got = wh.records("report_evidence", {"tool": None, "since": None, "until": None, "max_codes": max_codes,
                                         "per_code": per_code})
    rows = [(r["tool"], r["code"], r["errors"], r["example"], r["legacy_payload"], r["new_payload"]) for r in got]
    assert rows == evidence_definition(calls, max_codes, per_code)


def gaps_definition(calls: list[dict[str, Any]], marks: list[tuple[str, int | None, int]],
                    sessions: set[str]) -> tuple[int, int, int, int]:
    """Sessions (of ``sessions``) with a hole: a counter whose distinct seqs do not run on by one from at most 1;
    and over every session: how many, how many miss records and how many records (highest seq less distinct seqs,
    summed over a session's counters)."""
    used: dict[tuple[str, int | None], set[int]] = defaultdict(set)
    for c in calls:
        used[c["session_id"], c["epoch"]].add(c["seq"])
    for s, e, q in marks:
        used[s, e].add(q)
    holed, missing = set(), Counter[str]()
    for (sid, _), seqs in used.items():
        ordered = sorted(seqs)
        if any(now > before + 1 for before, now in zip([0, *ordered], ordered, strict=False)):
            holed.add(sid)
        missing[sid] += ordered[-1] - len(ordered)
    every = {sid for sid, _ in used}
    return (len(holed & sessions), len(every), sum(1 for s in every if missing[s] > 0),
            sum(n for n in missing.values() if n > 0))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls_spec, marks_spec, st.sampled_from([None, "a"]))
def test_sessions_with_gaps_and_missing_records_follow_the_sequence_numbers(
        calls: list[dict[str, Any]], marks: list[tuple[str, int | None, int]], tool: str | None) -> None:
    wh = warehouse(calls, marks)
    totals = wh.records("report_totals", {"tool": tool, "since": None, "until": None})[0]
    health = next(r for r in wh.records("report_log_health") if r["kind"] == "sessions")
    mine = {c["session_id"] for c in calls if tool is None or c["tool"] == tool}
    gapped, sessions, with_gaps, missing = gaps_definition(calls, marks, mine)
    assert totals["sessions_with_gaps"] == gapped
    assert (health["calls"], health["marks"], health["missing"]) == (sessions, with_gaps, missing)


followups_spec = st.lists(st.tuples(st.sampled_from(["s0", "s1", "s2"]), st.sampled_from(["legacy", "structured"]),
                                    st.sampled_from([*KINDS, "unknown"]), st.sampled_from(["a", "b"]),
                                    st.integers(0, 40)), min_size=1, max_size=25)
audit_spec = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 40), st.sampled_from([0, 50, 100])),
                      min_size=1, max_size=5)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(followups_spec, audit_spec)
def test_follow_up_shifts_are_the_per_session_sums_of_each_follow_up(
        rows: list[tuple[str, str, str, str, int]], audit: list[tuple[str, int, int]]) -> None:
    wh = Warehouse.in_memory()
    wh.con.execute("INSERT INTO flag_audit (id, tool, new_mode, new_percent, actor, ts) "
                   "VALUES ('f', 'a', 'shadow', 100, 'x', $t)", {"t": T0})
    wh.con.executemany("INSERT INTO flag_audit (id, tool, new_mode, new_percent, actor, ts) "
                       "VALUES (?, ?, 'cutover', ?, 'x', ?)",
                       [(f"f{i}", t, pct, T0 + dt.timedelta(days=d)) for i, (t, d, pct) in enumerate(audit)])
    wh.derive()
    wh.con.executemany("INSERT INTO error_followups (id, session_id, variant, follow_up, tool, ts) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       [(f"e{i}", s, v, f, t, T0 + dt.timedelta(days=d)) for i, (s, v, f, t, d) in enumerate(rows)])
    periods = wh.con.execute("SELECT tool, starts_at, ends_at FROM flag_periods WHERE randomised").fetchall()

    def in_split(tool: str, ts: dt.datetime) -> bool:
        return any(p[0] == tool and ts >= p[1] and (p[2] is None or ts < p[2]) for p in periods)

    want = []
    for scope in ("all", "randomised"):
        for variant in ("legacy", "structured"):
            per: dict[str, Counter[str]] = defaultdict(Counter)
            for s, v, f, t, d in rows:
                if v == variant and (scope == "all" or in_split(t, T0 + dt.timedelta(days=d))):
                    per[s][f] += 1
            if not per:
                continue
            for kind in KINDS:
                e = [sum(c.values()) for c in per.values()]
                h = [c[kind] for c in per.values()]
                want.append((scope, variant, kind, len(per), sum(e), sum(h), sum(x * x for x in e),
                             sum(x * x for x in h), sum(x * y for x, y in zip(e, h, strict=True))))
    got = wh.records("report_follow_up_shifts", {"tool": None, "since": None, "until": None})
    assert [tuple(r.values()) for r in got] == sorted(want)
