"""The dashboard's chart functions: what each draws from given aggregates, and that logged strings are escaped."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _dashboard_stores import EVIL_ACTOR, EVIL_CODE, EVIL_REASON, EVIL_TOOL, EVIL_VARIANT, build

from shadow.analytics import _stats as stats
from shadow.analytics._report import ArmStats, Comparison, FlagChange, PeriodStats, Savings, ToolReport
from shadow.analytics._thresholds import Thresholds
from shadow.analytics._warehouse import Warehouse
from shadow.dashboard import _charts as charts
from shadow.dashboard import _page as dashboard
from shadow.dashboard._data import Bucket, CodeCount, LoopSeries, SessionEvent, ToolReadiness, collect

T0 = dt.datetime(2025, 3, 1)
FOLLOW = ("repeat", "repair", "other_tool", "user_turn", "end", "nothing")


def arm(variant: str, errors: int, loops: int, **follow: int) -> ArmStats:
    w = stats.wilson(loops, errors)
    return ArmStats(
        variant=variant, calls=errors * 4, sessions=max(1, errors // 2), errors=errors, loops=loops,
        loop_rate=loops / errors if errors else None, ci_low=w.low if w else None, ci_high=w.high if w else None,
        cluster_ci_low=None, cluster_ci_high=None, bootstrap_ci_low=None, bootstrap_ci_high=None,
        back_to_back_loops=loops, loops_after_mark=0, mean_loop_length=1.0 if loops else None, justified_retries=0,
        justified_retries_with_hint=0, justified_retries_waited=0, unjustified_loops=loops,
        unjustified_loop_rate=loops / errors if errors else None, unmapped_errors=0, schema_invalid_calls=0,
        follow_ups={k: follow.get(k, 0) for k in FOLLOW}, field_repairs={"changed": 0, "unchanged": 0, "unknown": 0},
        codes={},
    )


def period(name: str, variant: str, errors: int, loops: int) -> PeriodStats:
    w = stats.wilson(loops, errors)
    assert w is not None
    return PeriodStats(name, variant, errors, errors, loops, loops / errors, w.low, w.high, None, None)  # type: ignore[arg-type]


def tool_report(name: str, periods: tuple[PeriodStats, ...] = (), variants: tuple[ArmStats, ...] = (),
                design: str = "randomised") -> ToolReport:
    test = stats.compare_arms([stats.PairedCluster(4, 2, 0, 0, 20), stats.PairedCluster(0, 0, 4, 0, 20)])
    return ToolReport(tool=name, calls=400, errors=80, unmapped_errors=0, unmapped_share=0.0, schema_invalid_calls=0,
                      schema_invalid_share=0.0, cutover_at=T0 if periods else None, variants=variants,
                      periods=periods, comparison=Comparison(name, design, test))  # type: ignore[arg-type]


def change(ts: dt.datetime, *, cutover: bool, tool: str = EVIL_TOOL) -> FlagChange:
    return FlagChange(tool, ts, "shadow", 100, "cutover" if cutover else "legacy", 50 if cutover else 100,
                      EVIL_ACTOR, EVIL_REASON, cutover)


def strings(value: Any) -> Iterator[str]:
    """Every string in a figure's JSON (keys too), the template left out (it holds no logged text)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k != "template":
                yield str(k)
                yield from strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from strings(v)
    elif isinstance(value, str):
        yield value


def figure_strings(fig: Any) -> list[str]:
    return list(strings(json.loads(fig.to_json())))


@pytest.fixture(scope="module")
def hostile_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warehouse]:
    store = build(tmp_path_factory.mktemp("hostile-charts"))
    with Warehouse.open(store.warehouse, read_only=True) as wh:
        yield wh


def test_text_escapes_what_plotly_would_read_as_markup() -> None:
    assert charts.text("<b>R&D</b>") == "&lt;b&gt;R&amp;D&lt;/b&gt;"
    assert charts.text("it's \"fine\"") == "it's \"fine\""


def test_no_logged_string_reaches_any_figure_as_markup(hostile_warehouse: Warehouse) -> None:
    figs = dashboard.figures(collect(hostile_warehouse))
    found = {name: figure_strings(fig) for name, fig in figs.items()}
    for name, texts in found.items():
        for raw in ("<img", "<script", "</script", "<svg", "<b>bold?"):
            assert not [t for t in texts if raw in t], (name, raw)
    everything = " ".join(t for texts in found.values() for t in texts)
    assert charts.text(EVIL_TOOL) in everything
    assert charts.text(EVIL_CODE) in everything
    assert charts.text(EVIL_VARIANT) in everything
    assert charts.text(EVIL_REASON) in everything and charts.text(EVIL_ACTOR) in everything


def test_loop_rate_chart_draws_a_band_and_a_line_per_arm_and_marks_flag_changes() -> None:
    buckets = tuple(Bucket(T0 + dt.timedelta(days=d), v, 20, loops, loops / 20, max(0, loops / 20 - 0.1),
                           loops / 20 + 0.1)
                    for d in range(5) for v, loops in (("legacy", 10), ("structured", 2)))
    changes = [change(T0 + dt.timedelta(days=2, hours=8), cutover=True),
               change(T0 + dt.timedelta(days=3, hours=8), cutover=False, tool="*")]
    fig = charts.loop_rate_over_time(LoopSeries("day", buckets), changes)
    names = [t.name for t in fig.data]
    assert names.count("legacy arm") == 1 and names.count("structured arm") == 1
    assert len(fig.data) == 2 * 3 + 1  # band edges and line per arm, then the flag-change markers
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert [s.line.dash for s in lines] == ["solid", "dot"]
    markers = fig.data[-1]
    assert list(markers.x) == [c.ts for c in changes]
    assert "cutover" in markers.hovertext[0] and "kill switch" in markers.hovertext[1]
    assert charts.text(EVIL_REASON) in markers.hovertext[0]
    line = next(t for t in fig.data if t.name == "legacy arm")
    assert list(line.y) == [0.5] * 5


def test_an_hours_point_sits_where_its_errors_are_not_half_an_hour_past_them() -> None:
    """A fresh-clone walk: errors logged from 00:01 to 00:02 were drawn at 00:30, after the last call and after the
    cutover line at 00:02."""
    hour = T0.replace(minute=0, second=0, microsecond=0)
    first, last = hour + dt.timedelta(minutes=1), hour + dt.timedelta(minutes=2)
    fig = charts.loop_rate_over_time(LoopSeries("hour", (Bucket(hour, "legacy", 10, 5, 0.5, 0.2, 0.8, first, last),
                                                         Bucket(hour, "structured", 10, 1, 0.1, 0.0, 0.4))), [])
    legacy = next(t for t in fig.data if t.name == "legacy arm")
    assert list(legacy.x) == [hour + dt.timedelta(minutes=1, seconds=30)]
    structured = next(t for t in fig.data if t.name == "structured arm")
    assert list(structured.x) == [hour + dt.timedelta(minutes=30)]  # no times known: the bucket's middle


def test_flag_changes_far_outside_the_drawn_buckets_are_not_marked() -> None:
    buckets = (Bucket(T0, "legacy", 10, 5, 0.5, 0.2, 0.8), Bucket(T0 + dt.timedelta(days=1), "legacy", 10, 5,
                                                                    0.5, 0.2, 0.8))
    fig = charts.loop_rate_over_time(LoopSeries("day", buckets), [change(T0 - dt.timedelta(days=30), cutover=True)])
    assert len(fig.data) == 3
    assert not fig.layout.shapes


def test_before_after_shows_each_period_with_its_interval_and_the_test_under_the_name() -> None:
    tools = [
        tool_report("create_task", periods=(period("before", "legacy", 100, 45), period("after", "legacy", 50, 22),
                                            period("after", "structured", 50, 3))),
        tool_report("send_email", variants=(arm("legacy", 60, 30),), design="none"),
    ]
    ready = {"create_task": ToolReadiness("create_task", True, (), 400, 80, 0, 0.0, 0, 0.0),
             "send_email": ToolReadiness("send_email", False, ("too many unmapped",), 400, 80, 60, 0.75, 0, 0.0)}
    fig = charts.before_after(tools, ready)
    by_name = {t.name: t for t in fig.data}
    assert set(by_name) == {"before cutover (legacy)", "after cutover, legacy arm", "after cutover, structured arm",
                            "no cutover in the flag history, legacy arm"}
    structured = by_name["after cutover, structured arm"]
    assert structured.x[0] == pytest.approx(0.06)
    assert structured.error_x.arrayminus[0] == pytest.approx(0.06 - stats.wilson(3, 50).low)  # type: ignore[union-attr]
    label = structured.y[0]
    assert label.startswith("create_task<br>") and "pts" in label and "randomised" in label
    not_ready = by_name["no cutover in the flag history, legacy arm"].y[0]
    assert "send_email ⚠ not ready" in not_ready and "no two-arm comparison yet" in not_ready


def test_code_mix_stacks_codes_per_tool_and_splits_out_the_unmapped_errors() -> None:
    counts = [CodeCount("a", "not_found", 30, 0), CodeCount("a", "internal_error", 20, 15),
              CodeCount("b", "validation_error", 10, 0)]
    fig = charts.code_mix(counts, ["a", "b"])
    totals: dict[str, int] = {}
    for trace in fig.data:
        for tool, n in zip(trace.y, trace.x, strict=True):
            totals[tool] = totals.get(tool, 0) + n
    assert totals == {"a": 50, "b": 10}
    names = [t.name for t in fig.data]
    assert names[:3] == ["validation_error", "not_found", "internal_error"]  # the code table's order
    assert names[-1].startswith("unmapped")
    assert fig.layout.barmode == "stack"


def test_readiness_draws_both_shares_and_the_gate_limit_with_no_label_on_the_line() -> None:
    rows = [ToolReadiness("ok_tool", True, (), 500, 50, 1, 0.02, 0, 0.0),
            ToolReadiness("bad_tool", False, ("40.0% of errors unmapped",), 500, 50, 20, 0.4, 5, 0.01)]
    fig = charts.readiness(rows, Thresholds(max_unmapped_share=0.1))
    unmapped, invalid, gate = fig.data
    assert list(unmapped.x) == [0.02, 0.4] and list(invalid.x) == [0.0, 0.01]
    assert unmapped.text is None and invalid.text is None and not fig.layout.annotations  # figures sit in the names
    assert "unmapped 40.0% · schema-invalid 1.0%" in unmapped.y[1]
    assert gate.name == "gate: at most 10% unmapped" and gate.line.dash == "dash"
    assert "⚠ not ready" in unmapped.y[1] and "not ready" not in unmapped.y[0]
    assert [s.x0 for s in fig.layout.shapes] == [0.1]
    assert "40.0% of errors unmapped" in unmapped.customdata[1][2]


def test_follow_up_shares_of_each_arm_add_up_to_one() -> None:
    arms = [arm("structured", 40, 4, repeat=4, repair=20, user_turn=16),
            arm("legacy", 100, 50, repeat=50, repair=20, other_tool=10, end=20)]
    fig = charts.follow_up_mix(arms)
    per_arm: dict[str, float] = {}
    for trace in fig.data:
        for label, share in zip(trace.y, trace.x, strict=True):
            per_arm[label] = per_arm.get(label, 0.0) + share
    assert per_arm == {"legacy arm": pytest.approx(1.0), "structured arm": pytest.approx(1.0)}
    assert "nothing after it" not in [t.name for t in fig.data]  # no error was followed by nothing


def test_savings_scales_wasted_repeats_to_1000_tasks_and_states_the_time() -> None:
    s = Savings(tasks=100, calls_per_task=40, errors_per_task=6, wasted_per_error_legacy=0.5,
                wasted_per_error_structured=0.1, round_trips_saved_per_task=2.4,
                round_trips_saved_per_1000_tasks=2400, median_latency_us=250_000, seconds_saved_per_1000_tasks=600,
                message="")
    fig = charts.savings(s)
    assert list(fig.data[0].y) == pytest.approx([3000, 600])
    note = fig.layout.annotations[0].text
    assert "2,400 round trips saved per 1,000 tasks" in note and "10.0 min" in note


def test_charts_without_data_say_so_instead_of_drawing() -> None:
    no_savings = Savings(0, None, None, None, None, None, None, None, None, "savings need errors in both arms")
    empty = [
        charts.loop_rate_over_time(LoopSeries("day", ()), []),
        charts.before_after([]),
        charts.readiness([], Thresholds()),
        charts.code_mix([], []),
        charts.follow_up_mix([arm("legacy", 0, 0)]),
        charts.savings(no_savings),
        charts.session_timeline([]),
    ]
    for fig in empty:
        assert len(fig.data) == 0
        assert fig.layout.annotations and fig.layout.annotations[0].text
    assert "both arms" in empty[5].layout.annotations[0].text


def _event(seq: int, kind: str = "call", tool: str | None = "t", outcome: str | None = "error",
           repeats: bool = False) -> SessionEvent:
    return SessionEvent(seq, T0, kind, tool if kind == "call" else None, "legacy", "shadow", outcome, "not_found",
                        "ask_user", False, False, "f", 10, repeats, "repeat", True, 1, None, None, None)


def test_session_timeline_rings_identical_repeats_and_marks_hand_overs() -> None:
    events = [_event(1), _event(2, repeats=True), _event(3, outcome="ok"), _event(4, kind="user_turn"),
              _event(5, tool=EVIL_TOOL, outcome="ok")]
    fig = charts.session_timeline(events)
    names = [t.name for t in fig.data]
    assert names == ["call that succeeded", "error", "identical repeat of the call before"]
    assert list(fig.data[2].x) == [2]
    assert [s.x0 for s in fig.layout.shapes] == [4]
    assert charts.text(EVIL_TOOL) in fig.data[0].y


def test_a_figure_serialises_without_raw_angle_brackets(tmp_path: Path) -> None:
    fig = charts.code_mix([CodeCount(EVIL_TOOL, "</script><script>alert(1)</script>", 3, 0)], [EVIL_TOOL])
    embedded = dashboard.script_json(fig)
    assert "<" not in embedded and ">" not in embedded
    assert json.loads(embedded)["data"][0]["name"] == "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"
