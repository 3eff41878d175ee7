"""The loop-rate report: per arm, per tool, code and day, before vs after cutover, the two-arm test, savings."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from shadow import sql, stats
from shadow.warehouse import Warehouse, WarehouseError

SCHEMA_VERSION: Final = 1
VARIANTS: Final = ("legacy", "structured")
FOLLOW_UPS: Final = ("repeat", "repair", "other_tool", "user_turn", "end", "nothing")
Design = Literal["randomised", "observational", "none"]
By = Literal["tool", "code", "day"]


class UnknownToolError(ValueError):
    """``--tool`` names a tool the warehouse has no calls of."""


@dataclass(frozen=True, slots=True)
class ArmStats:
    """Loop statistics of one arm (``variant``) within a group of errors."""

    variant: str
    calls: int
    sessions: int  # sessions with a call (arm rows) or with an error (code rows) in the group
    errors: int
    loops: int
    loop_rate: float | None
    ci_low: float | None  # Wilson 95%
    ci_high: float | None
    cluster_ci_low: float | None  # cluster-robust 95%, sessions as clusters
    cluster_ci_high: float | None
    bootstrap_ci_low: float | None  # seeded session bootstrap 95% (per-arm rows only)
    bootstrap_ci_high: float | None
    back_to_back_loops: int
    loops_after_mark: int
    mean_loop_length: float | None
    justified_retries: int
    justified_retries_with_hint: int
    justified_retries_waited: int
    unjustified_loops: int
    unjustified_loop_rate: float | None
    unmapped_errors: int
    schema_invalid_calls: int
    follow_ups: Mapping[str, int]
    field_repairs: Mapping[str, int]  # repairs after a validation_error naming a field: changed it or not
    codes: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class GroupRow:
    """One arm's statistics within one tool, code or day."""

    dimension: By
    key: str
    stats: ArmStats


@dataclass(frozen=True, slots=True)
class PeriodStats:
    """A tool's errors before or after its cutover moment, in one arm."""

    period: Literal["before", "after"]
    variant: str
    sessions: int
    errors: int
    loops: int
    loop_rate: float | None
    ci_low: float | None
    ci_high: float | None
    cluster_ci_low: float | None
    cluster_ci_high: float | None


@dataclass(frozen=True, slots=True)
class Comparison:
    """Structured minus legacy loop rate, clustered by session; ``design`` says whether arms were randomised."""

    scope: str  # "all tools" or a tool name
    design: Design
    test: stats.ArmComparison


@dataclass(frozen=True, slots=True)
class ToolReport:
    """One tool: readiness counts, arms, before vs after its cutover, and its two-arm comparison."""

    tool: str
    calls: int
    errors: int
    unmapped_errors: int
    unmapped_share: float | None  # of errors
    schema_invalid_calls: int
    schema_invalid_share: float | None  # of calls
    cutover_at: dt.datetime | None
    variants: tuple[ArmStats, ...]
    periods: tuple[PeriodStats, ...]
    comparison: Comparison


@dataclass(frozen=True, slots=True)
class Savings:
    """Round trips an error costs in wasted identical repeats, legacy vs structured, per task and per 1,000."""

    tasks: int
    calls_per_task: float | None
    errors_per_task: float | None
    wasted_per_error_legacy: float | None
    wasted_per_error_structured: float | None
    round_trips_saved_per_task: float | None
    round_trips_saved_per_1000_tasks: float | None
    median_latency_us: float | None
    seconds_saved_per_1000_tasks: float | None
    message: str


@dataclass(frozen=True, slots=True)
class FlagChange:
    """One row of the flag history; ``is_cutover`` marks a move into the structured arm."""

    tool: str
    ts: dt.datetime
    old_mode: str | None
    old_percent: int | None
    new_mode: str
    new_percent: int
    actor: str
    reason: str | None
    is_cutover: bool


@dataclass(frozen=True, slots=True)
class DataRange:
    """What the report covers."""

    first_call: dt.datetime | None
    last_call: dt.datetime | None
    calls: int
    errors: int
    sessions: int
    median_latency_us: float | None


@dataclass(frozen=True, slots=True)
class Filters:
    """The report's filters: tool, and UTC times (``since`` inclusive, ``until`` exclusive)."""

    tool: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None


@dataclass(frozen=True, slots=True)
class LoopRateReport:
    """The loop-rate report; ``to_json()`` gives its documented, stable JSON shape."""

    generated_at: dt.datetime
    filters: Filters
    data_range: DataRange
    variants: tuple[ArmStats, ...]
    by_tool: tuple[ToolReport, ...]
    by_code: tuple[GroupRow, ...]
    by_day: tuple[GroupRow, ...]
    comparison: Comparison
    savings: Savings
    flag_changes: tuple[FlagChange, ...]
    methods: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON-ready values (times as ISO 8601 UTC strings)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "generated_at": _iso(self.generated_at),
            "filters": _plain(self.filters),
            "data_range": _plain(self.data_range),
            "variants": [_plain(v) for v in self.variants],
            "by_tool": [_tool_dict(t) for t in self.by_tool],
            "by_code": [_row_dict(r) for r in self.by_code],
            "by_day": [_row_dict(r) for r in self.by_day],
            "comparison": _comparison_dict(self.comparison),
            "savings": _plain(self.savings),
            "flag_changes": [_plain(f) for f in self.flag_changes],
            "methods": dict(self.methods),
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON text."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    def rows(self, by: By = "tool") -> list[GroupRow]:
        """The breakdown rows for ``by`` (tool rows come from ``by_tool``)."""
        if by == "tool":
            return [GroupRow("tool", t.tool, v) for t in self.by_tool for v in t.variants]
        return list(self.by_code if by == "code" else self.by_day)


# --- JSON helpers ---------------------------------------------------------------------------------------------


def _iso(value: dt.datetime | dt.date | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None).isoformat() + "Z"
    return value.isoformat()


def _plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dt.datetime | dt.date):
        return _iso(obj)
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, tuple | list):
        return [_plain(v) for v in obj]
    return obj


def _row_dict(row: GroupRow) -> dict[str, Any]:
    return {row.dimension: row.key, **_plain(row.stats)}


def _comparison_dict(c: Comparison) -> dict[str, Any]:
    t = c.test
    return {
        "scope": c.scope, "design": c.design,
        "legacy": {"sessions": t.sessions_a, "errors": t.errors_a, "loops": t.loops_a, "loop_rate": t.rate_a},
        "structured": {"sessions": t.sessions_b, "errors": t.errors_b, "loops": t.loops_b, "loop_rate": t.rate_b},
        "difference": t.difference, "ci_low": t.ci_low, "ci_high": t.ci_high, "p_value": t.p_value,
        "bootstrap_ci_low": t.bootstrap_ci_low, "bootstrap_ci_high": t.bootstrap_ci_high,
        "verdict": t.verdict, "message": t.message,
    }


def _tool_dict(t: ToolReport) -> dict[str, Any]:
    out = {f.name: _plain(getattr(t, f.name)) for f in dataclasses.fields(t) if f.name != "comparison"}
    out["comparison"] = _comparison_dict(t.comparison)
    return out


# --- building the report ------------------------------------------------------------------------------------------


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _params(filters: Filters) -> dict[str, Any]:
    return {"tool": filters.tool, "since": filters.since, "until": filters.until}


def _records(con: Any, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    cur = sql.run(con, name, params)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def _arm(variant: str, call_row: Mapping[str, Any] | None, err: Mapping[str, Any] | None,
         codes: Mapping[str, int], boot: stats.Interval | None = None, *, sessions: int | None = None) -> ArmStats:
    e = dict(err or {})
    errors, loops = int(e.get("errors") or 0), int(e.get("loops") or 0)
    wil = stats.wilson(loops, errors)
    clu = stats.cluster_interval(int(e.get("sessions") or 0), errors, loops, float(e.get("sum_ee") or 0),
                                 float(e.get("sum_ll") or 0), float(e.get("sum_el") or 0)) if errors else None
    b2b = int(e.get("back_to_back_loops") or 0)
    justified = int(e.get("justified_retries") or 0)
    calls = int(call_row["calls"]) if call_row else errors
    return ArmStats(
        variant=variant,
        calls=calls,
        sessions=sessions if sessions is not None else int((call_row or e).get("sessions") or 0),
        errors=errors,
        loops=loops,
        loop_rate=_ratio(loops, errors),
        ci_low=wil.low if wil else None, ci_high=wil.high if wil else None,
        cluster_ci_low=clu.low if clu else None, cluster_ci_high=clu.high if clu else None,
        bootstrap_ci_low=boot.low if boot else None, bootstrap_ci_high=boot.high if boot else None,
        back_to_back_loops=b2b,
        loops_after_mark=loops - b2b,
        mean_loop_length=_ratio(float(e.get("loop_length_sum") or 0), loops),
        justified_retries=justified,
        justified_retries_with_hint=int(e.get("justified_retries_with_hint") or 0),
        justified_retries_waited=int(e.get("justified_retries_waited") or 0),
        unjustified_loops=loops - justified,
        unjustified_loop_rate=_ratio(loops - justified, errors),
        unmapped_errors=int(e.get("unmapped_errors") or 0),
        schema_invalid_calls=int(call_row["schema_invalid_calls"]) if call_row else 0,
        follow_ups={k: int(e.get(f"follow_{k}") or 0) for k in FOLLOW_UPS},
        field_repairs={k: int(e.get(f"field_repair_{k}") or 0) for k in ("changed", "unchanged", "unknown")},
        codes=dict(sorted(codes.items())),
    )


def _patterns(rows: Sequence[Mapping[str, Any]]) -> list[stats.PairedCluster]:
    return [stats.PairedCluster(int(r["errors_a"]), int(r["loops_a"]), int(r["errors_b"]), int(r["loops_b"]),
                                int(r["sessions"])) for r in rows]


def _comparison(scope: str, randomised: list[stats.PairedCluster], observational: list[stats.PairedCluster],
                opts: Mapping[str, int]) -> Comparison:
    def errors_in(items: list[stats.PairedCluster]) -> tuple[int, int]:
        return (sum(c.errors_a * c.weight for c in items), sum(c.errors_b * c.weight for c in items))

    ra, rb = errors_in(randomised)
    if ra and rb:
        return Comparison(scope, "randomised", stats.compare_arms(randomised, **opts))
    oa, ob = errors_in(observational)
    test = stats.compare_arms(observational, **opts)
    if oa and ob:
        message = "observational, not randomised (no percentage split with errors in both arms): " + test.message
        return Comparison(scope, "observational", dataclasses.replace(test, message=message))
    message = (f"nothing to compare: only one arm has errors (legacy {oa}, structured {ob}); cut over a "
               "percentage of sessions to measure the difference")
    return Comparison(scope, "none", dataclasses.replace(test, message=message))


def _savings(variants: Sequence[ArmStats], data: DataRange) -> Savings:
    by = {v.variant: v for v in variants}
    tasks = data.sessions
    legacy, structured = by.get("legacy"), by.get("structured")
    wl = _ratio(legacy.unjustified_loops, legacy.errors) if legacy else None
    ws = _ratio(structured.unjustified_loops, structured.errors) if structured else None
    per_task = _ratio(data.errors, tasks)
    latency = data.median_latency_us
    if wl is None or ws is None or per_task is None:
        message = "savings need errors in both arms (legacy and structured); cut over part of the traffic first"
        saved = None
    else:
        saved = (wl - ws) * per_task
        message = (f"{saved:.2f} round trips saved per task ({saved * 1000:.0f} per 1,000 tasks): "
                   f"{per_task:.2f} errors per task, each wasting {wl:.3f} identical repeats on legacy "
                   f"vs {ws:.3f} on structured")
    return Savings(
        tasks=tasks, calls_per_task=_ratio(data.calls, tasks), errors_per_task=per_task,
        wasted_per_error_legacy=wl, wasted_per_error_structured=ws,
        round_trips_saved_per_task=saved,
        round_trips_saved_per_1000_tasks=saved * 1000 if saved is not None else None,
        median_latency_us=latency,
        seconds_saved_per_1000_tasks=saved * 1000 * latency / 1e6 if saved is not None and latency else None,
        message=message,
    )


def _periods(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[PeriodStats]]:
    out: dict[str, list[PeriodStats]] = defaultdict(list)
    for r in rows:
        errors, loops = int(r["errors"]), int(r["loops"])
        wil = stats.wilson(loops, errors)
        clu = stats.cluster_interval(int(r["sessions"]), errors, loops, float(r["sum_ee"]), float(r["sum_ll"]),
                                     float(r["sum_el"]))
        out[r["tool"]].append(PeriodStats(
            r["period"], r["variant"], int(r["sessions"]), errors, loops, _ratio(loops, errors),
            wil.low if wil else None, wil.high if wil else None, clu.low if clu else None,
            clu.high if clu else None))
    return out


def loop_rate_report(
    warehouse: Warehouse,
    *,
    tool: str | None = None,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    seed: int = stats.DEFAULT_SEED,
    resamples: int = stats.DEFAULT_RESAMPLES,
    min_errors: int = stats.MIN_ERRORS_PER_ARM,
    min_sessions: int = stats.MIN_SESSIONS_PER_ARM,
) -> LoopRateReport:
    """Build the loop-rate report from a synced warehouse. Times are UTC (naive or aware); ``until`` is exclusive.

    Raises ``UnknownToolError`` when ``tool`` has no calls in the warehouse, ``WarehouseError`` when it is empty.
    """
    if not warehouse.is_synced():
        raise WarehouseError("the warehouse is empty; run `shadow sync` first")
    filters = Filters(tool, _utc(since), _utc(until))
    if filters.since and filters.until and filters.since >= filters.until:
        raise ValueError(f"--since ({_iso(filters.since)}) must be before --until ({_iso(filters.until)})")
    con = warehouse.con
    params = _params(filters)
    total = _records(con, "report_totals", params)[0]
    if tool is not None and not total["calls"]:
        known = [r["tool"] for r in _records(con, "known_tools")]
        if tool not in known:
            listed = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
            raise UnknownToolError(f"no calls of tool {tool!r} in the warehouse; known tools: {listed or 'none'}")
    data = DataRange(total["first_call"], total["last_call"], int(total["calls"]), int(total["errors"]),
                     int(total["sessions"]),
                     float(total["median_latency_us"]) if total["median_latency_us"] is not None else None)
    call_rows = _records(con, "report_calls", params)
    err_rows = _records(con, "report_errors", params)
    opts = {"seed": seed, "resamples": resamples, "min_errors": min_errors, "min_sessions": min_sessions}

    codes: dict[tuple[str, str | None], dict[str, int]] = defaultdict(dict)  # (variant, tool or None) -> mix
    for r in err_rows:
        if r["by_code"]:
            codes[(r["variant"], None)][str(r["code"])] = int(r["errors"])
    boot_rows = _records(con, "report_sessions", params)
    variants: list[ArmStats] = []
    calls_by_variant = {r["variant"]: r for r in call_rows if r["by_variant"] and not r["by_tool"] and not r["by_day"]}
    errs_by_variant = {r["variant"]: r for r in err_rows if not (r["by_tool"] or r["by_code"] or r["by_day"])}
    for variant in sorted(set(calls_by_variant) | set(errs_by_variant), key=_variant_order):
        clusters = [stats.Cluster(int(b["errors"]), int(b["loops"]), int(b["sessions"]))
                    for b in boot_rows if b["variant"] == variant]
        boot = stats.bootstrap_rate(clusters, seed=seed, resamples=resamples)
        variants.append(_arm(variant, calls_by_variant.get(variant), errs_by_variant.get(variant),
                             codes[(variant, None)], boot))

    def rows_for(dim: By) -> list[GroupRow]:
        flag = f"by_{dim}"
        calls = {(r["variant"], r[dim]): r for r in call_rows if r["by_variant"] and dim != "code" and r[flag]}
        errs = {(r["variant"], r[dim]): r for r in err_rows if r[flag]}
        keys = sorted(set(calls) | set(errs), key=lambda k: (str(k[1]), _variant_order(k[0])))
        return [GroupRow(dim, _key(k[1]), _arm(k[0], calls.get(k), errs.get(k), {}, sessions=None))
                for k in keys]

    by_code = rows_for("code")
    by_day = rows_for("day")
    tool_rows = rows_for("tool")
    comp_rand = _records(con, "report_comparison", {**params, "randomised": True})
    comp_obs = _records(con, "report_comparison", {**params, "randomised": False})
    periods = _periods(_records(con, "report_periods", params))
    cutovers = dict(con.execute(
        "SELECT tool, min(first_cutover_at) FROM flag_periods GROUP BY tool").fetchall())
    per_tool_calls = {r["tool"]: r for r in call_rows if not r["by_variant"]}
    by_tool: list[ToolReport] = []
    for name in sorted(per_tool_calls):
        c = per_tool_calls[name]
        arms = tuple(g.stats for g in tool_rows if g.key == name)
        comparison = _comparison(
            name, _patterns([r for r in comp_rand if not r["all_tools"] and r["tool"] == name]),
            _patterns([r for r in comp_obs if not r["all_tools"] and r["tool"] == name]), opts)
        by_tool.append(ToolReport(
            tool=name, calls=int(c["calls"]), errors=int(c["errors"]), unmapped_errors=int(c["unmapped_errors"]),
            unmapped_share=_ratio(int(c["unmapped_errors"]), int(c["errors"])),
            schema_invalid_calls=int(c["schema_invalid_calls"]),
            schema_invalid_share=_ratio(int(c["schema_invalid_calls"]), int(c["calls"])),
            cutover_at=cutovers.get(name), variants=arms, periods=tuple(periods.get(name, ())),
            comparison=comparison,
        ))
    overall = _comparison("all tools", _patterns([r for r in comp_rand if r["all_tools"]]),
                          _patterns([r for r in comp_obs if r["all_tools"]]), opts)
    changes = tuple(FlagChange(**r) for r in _records(con, "report_flag_changes", {"tool": tool}))
    return LoopRateReport(
        generated_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        filters=filters, data_range=data, variants=tuple(variants), by_tool=tuple(by_tool),
        by_code=tuple(by_code), by_day=tuple(by_day), comparison=overall, savings=_savings(variants, data),
        flag_changes=changes,
        methods={
            "interval": "wilson 95%", "cluster_interval": "cluster-robust (linearised ratio, CR1) 95%, sessions",
            "bootstrap": f"session-level percentile bootstrap, {resamples} resamples, seed {seed}",
            "test": "cluster-robust Wald test of structured minus legacy loop rate, two-sided",
            "min_errors_per_arm": min_errors, "min_sessions_per_arm": min_sessions,
            "synced_at": warehouse.state().get("synced_at"),
        },
    )


def _variant_order(variant: str) -> tuple[int, str]:
    return (VARIANTS.index(variant) if variant in VARIANTS else len(VARIANTS), variant)


def _key(value: object) -> str:
    if isinstance(value, dt.date):
        return value.isoformat()
    return "" if value is None else str(value)


def _utc(value: dt.datetime | dt.date | None) -> dt.datetime | None:
    if value is None:
        return None
    if not isinstance(value, dt.datetime):
        return dt.datetime(value.year, value.month, value.day)
    if value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def parse_time(text: str, *, until: bool = False) -> dt.datetime:
    """A UTC time from ``YYYY-MM-DD`` or ISO 8601; a bare date as ``until`` means through the end of that day."""
    raw = text.strip()
    try:
        if len(raw) == 10:
            day = dt.date.fromisoformat(raw)
            start = dt.datetime(day.year, day.month, day.day)
            return start + dt.timedelta(days=1) if until else start
        parsed = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not a date; use YYYY-MM-DD or an ISO 8601 time, for example 2025-03-14 "
                         "or 2025-03-14T09:30:00Z") from None
    result = _utc(parsed)
    assert result is not None
    return result


# --- rendering ----------------------------------------------------------------------------------------------------

CSV_COLUMNS: Final = (
    "dimension", "key", "variant", "calls", "sessions", "errors", "loops", "loop_rate", "ci_low", "ci_high",
    "cluster_ci_low", "cluster_ci_high", "back_to_back_loops", "loops_after_mark", "mean_loop_length",
    "justified_retries", "justified_retries_waited", "unjustified_loops", "unmapped_errors",
    *(f"follow_{k}" for k in FOLLOW_UPS),
)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _ci(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"{low:.1%}-{high:.1%}"


def _table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body, strict=True)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line.rstrip(), "  ".join("-" * w for w in widths)]
    out += ["  ".join(str(c).rjust(w) if i >= 2 else str(c).ljust(w) for i, (c, w) in
                      enumerate(zip(row, widths, strict=True))).rstrip() for row in body]
    return out


def _arm_cells(s: ArmStats) -> list[str]:
    return [s.variant, str(s.calls), str(s.errors), str(s.loops), _pct(s.loop_rate), _ci(s.ci_low, s.ci_high),
            _ci(s.cluster_ci_low, s.cluster_ci_high), str(s.back_to_back_loops),
            "-" if s.mean_loop_length is None else f"{s.mean_loop_length:.2f}", str(s.justified_retries)]


def render_table(report: LoopRateReport, by: By = "tool") -> str:
    """The report as text tables for a terminal."""
    d = report.data_range
    lines = [
        f"Loop rate: {d.calls} calls, {d.errors} errors, {d.sessions} sessions, "
        f"{_iso(d.first_call) or '-'} to {_iso(d.last_call) or '-'}"
        + (f", tool {report.filters.tool}" if report.filters.tool else ""),
        "",
    ]
    arm_head = ["variant", "calls", "errors", "loops", "loop rate", "95% CI (Wilson)", "95% CI (sessions)",
                "back to back", "mean length", "justified retries"]
    lines += _table(arm_head, [_arm_cells(v) for v in report.variants])
    lines.append("")
    fu_head = ["variant", *FOLLOW_UPS, "field repaired", "field unchanged"]
    lines.append("Follow-up of each error:")
    lines += _table(fu_head, [[v.variant, *(str(v.follow_ups[k]) for k in FOLLOW_UPS),
                               str(v.field_repairs["changed"]), str(v.field_repairs["unchanged"])]
                              for v in report.variants])
    lines.append("")
    lines.append(f"By {by}:")
    lines += _table([by, *arm_head], [[r.key, *_arm_cells(r.stats)] for r in report.rows(by)])
    lines.append("")
    lines.append(f"Comparison ({report.comparison.scope}, {report.comparison.design}): "
                 f"{report.comparison.test.message}")
    for t in report.by_tool:
        if t.cutover_at is not None or t.comparison.design == "randomised":
            lines.append(f"  {t.tool}: cutover {_iso(t.cutover_at) or '-'}; {t.comparison.test.message}")
    lines.append(f"Savings: {report.savings.message}")
    if report.savings.seconds_saved_per_1000_tasks is not None:
        lines.append(f"  at a median call latency of {report.savings.median_latency_us or 0:.0f} us: "
                     f"{report.savings.seconds_saved_per_1000_tasks:.2f} s of tool time per 1,000 tasks")
    return "\n".join(lines) + "\n"


def csv_rows(report: LoopRateReport, by: By = "tool") -> list[list[object]]:
    """Rows for CSV: every arm overall (dimension ``all``), then the ``by`` breakdown."""
    def cells(dimension: str, key: str, s: ArmStats) -> list[object]:
        values = [dimension, key, s.variant, s.calls, s.sessions, s.errors, s.loops, s.loop_rate, s.ci_low,
                  s.ci_high, s.cluster_ci_low, s.cluster_ci_high, s.back_to_back_loops, s.loops_after_mark,
                  s.mean_loop_length, s.justified_retries, s.justified_retries_waited, s.unjustified_loops,
                  s.unmapped_errors, *(s.follow_ups[k] for k in FOLLOW_UPS)]
        return ["" if v is None else v for v in values]

    out: list[list[object]] = [list(CSV_COLUMNS)]
    out += [cells("all", "", v) for v in report.variants]
    out += [cells(r.dimension, r.key, r.stats) for r in report.rows(by)]
    return out


def render_csv(report: LoopRateReport, by: By = "tool") -> str:
    """The report as CSV text (header row first)."""
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(csv_rows(report, by))
    return buf.getvalue()
