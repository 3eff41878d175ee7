"""The loop-rate report: per arm, per tool, code and day, before vs after cutover, the two-arm test, savings."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from shadow._clock import parse_time
from shadow.analytics import _effects as effects
from shadow.analytics import _stats as stats
from shadow.analytics._decisions import decide
from shadow.analytics._defaults import DEFAULT_SEED
from shadow.analytics._give_ups import give_up
from shadow.analytics._health import log_health
from shadow.analytics._recommend import Policy
from shadow.analytics._render import csv_rows, render_csv, render_table
from shadow.analytics._report_types import (
    FOLLOW_UPS,
    SCHEMA_VERSION,
    VARIANTS,
    ArmStats,
    By,
    Comparison,
    DataRange,
    Design,
    Filters,
    FlagChange,
    GroupRow,
    LoopRateReport,
    PeriodStats,
    RulesRow,
    Savings,
    ToolReport,
    UnknownToolError,
    iso,
)
from shadow.analytics._retranslate import Retranslated, retranslate_by_tool
from shadow.analytics._shapes import comparison as _comparison
from shadow.analytics._shapes import shapes as _shapes
from shadow.analytics._warehouse import WarehouseError

if TYPE_CHECKING:
    from shadow.analytics._sql import ModelEngine
    from shadow.contract._rules import Rules

__all__ = [
    "FOLLOW_UPS", "SCHEMA_VERSION", "VARIANTS", "ArmStats", "By", "Comparison", "DataRange", "Design", "Filters",
    "FlagChange", "GroupRow", "LoopRateReport", "PeriodStats", "Savings", "ToolReport", "UnknownToolError",
    "csv_rows", "iso", "loop_rate_report", "parse_time", "render_csv", "render_table",
]


# --- building the report ------------------------------------------------------------------------------------------


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _params(filters: Filters) -> dict[str, Any]:
    return {"tool": filters.tool, "since": filters.since, "until": filters.until}


def _add(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Column sums of additive count rows."""
    out: dict[str, float] = defaultdict(float)
    for r in rows:
        for k, v in r.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                out[k] += v
    return out


def _arm(variant: str, calls: Mapping[str, Any] | None, err: Mapping[str, Any] | None, codes: Mapping[str, int],
         clusters: Sequence[stats.Cluster] | None = None, boot: stats.Interval | None = None,
         sums: Mapping[str, Any] | None = None) -> ArmStats:
    e = dict(err or {})
    errors, loops = int(e.get("errors") or 0), int(e.get("loops") or 0)
    wil = stats.wilson(loops, errors)
    clu = sessions = None
    if sums is not None:
        sessions = int(sums["sessions"])
        clu = stats.cluster_interval(sessions, errors, loops, float(sums["sum_ee"]), float(sums["sum_ll"]),
                                     float(sums["sum_el"]))
    elif clusters is not None:
        sessions = sum(c.weight for c in clusters if c.errors > 0)
        clu = stats.clusters_interval(clusters)
    b2b = int(e.get("back_to_back_loops") or 0)
    justified = int(e.get("justified_retries") or 0)
    return ArmStats(
        variant=variant,
        calls=int(calls["calls"]) if calls else errors,
        sessions=sessions,
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
        schema_invalid_calls=int(calls["schema_invalid_calls"]) if calls else 0,
        follow_ups={k: int(e.get(f"follow_{k}") or 0) for k in FOLLOW_UPS},
        field_repairs={k: int(e.get(f"field_repair_{k}") or 0) for k in ("changed", "unchanged", "unknown")},
        codes=dict(sorted(codes.items())),
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
    warehouse: ModelEngine,
    *,
    tool: str | None = None,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    seed: int = DEFAULT_SEED,
    resamples: int = stats.DEFAULT_RESAMPLES,
    min_errors: int = stats.MIN_ERRORS_PER_ARM,
    min_sessions: int = stats.MIN_SESSIONS_PER_ARM,
    policy: Policy | None = None,
    bytes_per_token: float = effects.DEFAULT_BYTES_PER_TOKEN,
    evidence: bool = True,
    rules: Rules | None = None,
    rules_name: str = "the given rules",
) -> LoopRateReport:
    """Build the loop-rate report from a synced warehouse (DuckDB, or the same models on Spark).

    Times are UTC (naive or aware); ``until`` is exclusive.

    ``policy`` holds the thresholds of the per-tool recommendations, ``bytes_per_token`` the token estimator of
    the savings; ``evidence=False`` leaves out the example payloads and unmapped shapes. With ``rules`` (named
    ``rules_name`` in the output), every logged error's legacy outcome is translated again with them (as
    ``shadow ready --rules`` does) and each tool's unmapped count and recommendation rest on that.
    Raises ``UnknownToolError`` when ``tool`` has no calls in the warehouse, ``WarehouseError`` when it is empty.
    """
    if not warehouse.is_synced():
        raise WarehouseError("the warehouse is empty; run `shadow sync` first")
    filters = Filters(tool, _utc(since), _utc(until))
    if filters.since and filters.until and filters.since >= filters.until:
        raise ValueError(f"--since ({iso(filters.since)}) must be before --until ({iso(filters.until)})")
    params = _params(filters)
    total = warehouse.records("report_totals", params)[0]
    if tool is not None and not total["calls"]:
        known = [r["tool"] for r in warehouse.records("known_tools")]
        if tool not in known:
            listed = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
            raise UnknownToolError(f"no calls of tool {tool!r} in the warehouse; known tools: {listed or 'none'}")
    data = DataRange(total["first_call"], total["last_call"], int(total["calls"]), int(total["errors"]),
                     int(total["sessions"]),
                     float(total["median_latency_us"]) if total["median_latency_us"] is not None else None,
                     int(total["simulated_calls"] or 0), int(total["sessions_with_gaps"] or 0),
                     int(total["synthetic_time_calls"] or 0))
    opts = {"seed": seed, "resamples": resamples, "min_errors": min_errors, "min_sessions": min_sessions}
    call_rows = warehouse.records("report_calls", params)
    err_rows = warehouse.records("report_errors", params)
    the_policy = policy or Policy()
    within = the_policy.give_up_within
    shapes = _shapes(warehouse.records("report_sessions", {**params, "within": within}))
    periods = _periods(warehouse.records("report_periods", params))
    day_sums = {(r["variant"], _key(r["day"])): r for r in warehouse.records("report_days", params)}

    calls_vt = {(r["variant"], r["tool"]): r for r in call_rows if not r["by_day"]}
    calls_vd = {(r["variant"], _key(r["day"])): r for r in call_rows if r["by_day"]}
    errs_vt = {(r["variant"], r["tool"]): r for r in err_rows if not (r["by_code"] or r["by_day"])}
    errs_vc = {(r["variant"], str(r["code"])): r for r in err_rows if r["by_code"]}
    errs_vd = {(r["variant"], _key(r["day"])): r for r in err_rows if r["by_day"]}
    pooled = [s for s in shapes if s.tool is None]

    variants: list[ArmStats] = []
    for variant in sorted({v for v, _ in calls_vt} | {v for v, _ in errs_vt}, key=_variant_order):
        clusters = [s.arm(variant) for s in pooled]
        boot = stats.bootstrap_rate(clusters, seed=seed, resamples=resamples)
        codes = {c: int(r["errors"]) for (v, c), r in errs_vc.items() if v == variant and r["errors"]}
        variants.append(_arm(
            variant, _add([r for (v, _), r in calls_vt.items() if v == variant]),
            _add([r for (v, _), r in errs_vt.items() if v == variant]), codes, clusters, boot))

    def rows_for(dim: By, calls: Mapping[tuple[str, str], Any], errs: Mapping[tuple[str, str], Any]) -> list[GroupRow]:
        keys = sorted(set(calls) | set(errs), key=lambda k: (k[1], _variant_order(k[0])))
        out = []
        for variant, key in keys:
            clusters = [s.arm(variant) for s in shapes if s.tool == key] if dim == "tool" else None
            out.append(GroupRow(dim, key, _arm(variant, calls.get((variant, key)), errs.get((variant, key)), {},
                                               clusters, sums=day_sums.get((variant, key)) if dim == "day" else None)))
        return out

    tool_rows = rows_for("tool", calls_vt, errs_vt)
    cutovers = warehouse.cutovers()
    by_tool: list[ToolReport] = []
    for name in sorted({t for _, t in calls_vt}):
        c = _add([r for (_, t), r in calls_vt.items() if t == name])
        calls_n, errors_n = int(c["calls"]), int(c["errors"])
        mine = [s for s in shapes if s.tool == name]
        by_tool.append(ToolReport(
            tool=name, calls=calls_n, errors=errors_n, unmapped_errors=int(c["unmapped_errors"]),
            unmapped_share=_ratio(int(c["unmapped_errors"]), errors_n),
            schema_invalid_calls=int(c["schema_invalid_calls"]),
            schema_invalid_share=_ratio(int(c["schema_invalid_calls"]), calls_n),
            cutover_at=cutovers.get(name), variants=tuple(g.stats for g in tool_rows if g.key == name),
            periods=tuple(periods.get(name, ())),
            comparison=_comparison(name, mine, opts),
            give_ups=give_up("gives", name, mine, opts, within),
            ended_soon=give_up("ends", name, mine, opts, within),
            stop_quits=give_up("stops", name, mine, opts, within),
        ))
    still_unmapped: dict[str, list[Mapping[str, Any]]] | None = None
    if rules is not None:
        outcomes = warehouse.records("report_error_outcomes", params)
        again, still_unmapped = retranslate_by_tool(outcomes, rules, shapes=evidence)
        by_tool = [_judged(t, again.get(t.tool)) for t in by_tool]
    changes = tuple(FlagChange(**r) for r in warehouse.records("report_flag_changes", {"tool": tool}))
    legacy_clusters = {t.tool: [s.arm("legacy") for s in shapes if s.tool == t.tool] for t in by_tool}
    decided, sizes = decide(warehouse, params, by_tool, legacy_clusters, changes, the_policy, evidence=evidence,
                            unmapped_rows=still_unmapped)
    split_tools = [t for t in decided if t.comparison.design == "randomised"]
    split_errors = sum(t.errors for t in split_tools)
    weighted = sum(sizes.get(t.tool, 0.0) * t.errors for t in split_tools)
    comparison = _comparison("all tools", pooled, opts)
    savings = effects.savings(comparison, tasks=data.sessions, calls=data.calls, errors_in_split_tools=split_errors,
                              median_latency_us=data.median_latency_us,
                              bytes_per_round_trip=weighted / split_errors if split_errors else None,
                              bytes_per_token=bytes_per_token)
    return LoopRateReport(
        generated_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        filters=filters, data_range=data, variants=tuple(variants), by_tool=tuple(decided),
        by_code=tuple(rows_for("code", {}, errs_vc)), by_day=tuple(rows_for("day", calls_vd, errs_vd)),
        comparison=comparison, savings=savings,
        flag_changes=changes,
        methods={
            "interval": "wilson 95%",
            "cluster_interval": "cluster-robust (linearised ratio, CR1) 95%, sessions as clusters (arms, tools, days)",
            "bootstrap": f"session-level percentile bootstrap, {resamples} resamples, seed {seed}",
            "test": "cluster-robust Wald test of structured minus legacy loop rate, two-sided",
            "min_errors_per_arm": min_errors, "min_sessions_per_arm": min_sessions,
            "synced_at": _synced_at(warehouse.state().get("synced_at")),
            "power": "two proportions, normal approximation, unpooled variances, times the design effect of the "
                     "legacy arm's errors clustered in sessions",
            "savings": f"randomised comparison only; tokens = bytes / {bytes_per_token:g}",
            "follow_up_shifts": "structured minus legacy share, cluster-robust 95%, arms independent",
            "recommendation": dataclasses.asdict(the_policy),
        },
        follow_up_shifts=effects.follow_up_shifts(warehouse.records("report_follow_up_shifts", params)),
        health=log_health(warehouse),
        rules=rules_name if rules is not None else "as logged",
        by_rules=tuple(_rules_row(r) for r in warehouse.records("report_rules", params)),
    )


def _rules_row(r: Mapping[str, Any]) -> RulesRow:
    errors, unmapped, loops = int(r["errors"]), int(r["unmapped_errors"]), int(r["loops"])
    return RulesRow(str(r["tool"]), r["rules_fingerprint"], int(r["calls"]), errors, unmapped,
                    _ratio(unmapped, errors), loops, _ratio(loops, int(r["loop_errors"])), r["first_call"],
                    r["last_call"])


def _judged(t: ToolReport, again: Retranslated | None) -> ToolReport:
    """``t`` with its errors as today's rules read them: the unmapped ones, and those no longer read as errors."""
    if again is None:  # no error of the tool is logged: nothing to read again
        return t
    return dataclasses.replace(t, unmapped_errors=again.unmapped, unmapped_share=_ratio(again.unmapped, again.errors),
                               no_longer_errors=again.no_longer_errors)


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


def _synced_at(text: str | None) -> str | None:
    """The warehouse's last sync (stored as naive UTC) in the report's time format, ending in ``Z``."""
    return iso(dt.datetime.fromisoformat(text)) if text else None
