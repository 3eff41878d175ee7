"""What the cutover dashboard draws: the loop-rate report plus a few aggregates, capped so the page stays small."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from shadow.analytics import _stats as stats
from shadow.analytics._defaults import DEFAULT_SEED
from shadow.analytics._ready import count_checks
from shadow.analytics._report import FlagChange, LoopRateReport, ToolReport, loop_rate_report
from shadow.analytics._source import WarehouseError
from shadow.analytics._sql import ModelEngine
from shadow.analytics._thresholds import Thresholds
from shadow.contract._rules import Rules

#: The most tools the per-tool charts draw (the busiest ones); the page says when more exist.
MAX_TOOLS: Final = 20
#: The most time buckets the loop-rate chart draws (the latest ones).
MAX_BUCKETS: Final = 120
#: The most arms drawn (``legacy`` and ``structured``, plus any other variant the log holds).
MAX_VARIANTS: Final = 4
#: The most error codes drawn in the code mix (the most frequent; the rest are summed as "other codes").
MAX_CODES: Final = 16
#: The most flag changes listed and marked (the latest ones).
MAX_FLAG_CHANGES: Final = 50

Unit = Literal["hour", "day", "week", "month"]
OTHER_CODES: Final = "other codes"
NO_CODE: Final = "(no code)"


@dataclass(frozen=True, slots=True)
class Bucket:
    """One arm's errors and loops in one time bucket, with the Wilson 95% interval of the loop rate."""

    start: dt.datetime
    variant: str
    errors: int
    loops: int
    loop_rate: float | None
    ci_low: float | None
    ci_high: float | None
    #: the bucket's first and last error: the point is drawn between them (None: at the bucket's middle)
    first: dt.datetime | None = None
    last: dt.datetime | None = None


@dataclass(frozen=True, slots=True)
class LoopSeries:
    """The loop rate over time per arm; ``dropped`` older buckets were left out to stay within ``MAX_BUCKETS``."""

    unit: Unit
    buckets: tuple[Bucket, ...]
    dropped: int = 0
    variants_dropped: int = 0  # arms left out to stay within ``MAX_VARIANTS``


@dataclass(frozen=True, slots=True)
class CodeCount:
    """How many errors of ``code`` a tool returned (both arms), and how many of them no rule mapped."""

    tool: str
    code: str
    errors: int
    unmapped: int


@dataclass(frozen=True, slots=True)
class ToolReadiness:
    """Whether a tool's log passes the cutover gate's count checks (``shadow ready`` also scans for leaks)."""

    tool: str
    ready: bool
    reasons: tuple[str, ...]
    calls: int
    errors: int
    unmapped_errors: int
    unmapped_share: float | None
    schema_invalid_calls: int
    schema_invalid_share: float | None


@dataclass(frozen=True, slots=True)
class DashboardData:
    """Everything the page shows, already aggregated and capped: its size does not grow with the call count."""

    report: LoopRateReport
    series: LoopSeries
    tools: tuple[ToolReport, ...]  # the tools drawn, busiest first
    readiness: tuple[ToolReadiness, ...]  # one per drawn tool, same order
    code_mix: tuple[CodeCount, ...]  # drawn tools only
    flag_changes: tuple[FlagChange, ...]  # the latest MAX_FLAG_CHANGES, oldest first
    thresholds: Thresholds
    notices: tuple[str, ...]  # what was capped, in plain words
    subtitle: str | None
    generated_at: dt.datetime


@dataclass(frozen=True, slots=True)
class LoopedSession:
    """A session with errors followed by loops (``dashboard_looped_sessions.sql``)."""

    session_id: str
    variants: str
    tools: str
    errors: int
    loops: int
    longest_loop: int
    first_error_at: dt.datetime


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One call or mark of a session, in order (``dashboard_session_events.sql``)."""

    seq: int
    ts: dt.datetime
    kind: str  # "call", "user_turn" or "end"
    tool: str | None
    variant: str | None
    mode: str | None
    outcome: str | None
    code: str | None
    next_action: str | None
    retryable: bool | None
    unmapped: bool | None
    fingerprint: str | None
    latency_us: int | None
    repeats_previous: bool | None
    follow_up: str | None
    looped: bool | None
    loop_length: int | None
    args: str | None
    legacy_payload: str | None
    new_payload: str | None


def choose_unit(first: dt.datetime | None, last: dt.datetime | None) -> Unit:
    """The bucket width for a data range: hours up to 3 days, days up to 120, weeks up to two years, else months."""
    if first is None or last is None:
        return "day"
    span = last - first
    if span <= dt.timedelta(days=3):
        return "hour"
    if span <= dt.timedelta(days=120):
        return "day"
    if span <= dt.timedelta(days=730):
        return "week"
    return "month"


def loop_series(models: ModelEngine, unit: Unit, *, tool: str | None = None, since: dt.datetime | None = None,
                until: dt.datetime | None = None, max_buckets: int = MAX_BUCKETS,
                max_variants: int = MAX_VARIANTS) -> LoopSeries:
    """Errors and loops per ``unit`` and arm, the latest ``max_buckets`` buckets, with Wilson 95% intervals."""
    rows = models.records("dashboard_loop_rate_over_time",
                    {"unit": unit, "tool": tool, "since": since, "until": until})
    variants = _top_variants({str(r["variant"]): int(r["errors"]) for r in rows}, max_variants)
    starts = sorted({r["bucket"] for r in rows})
    kept = set(starts[-max_buckets:]) if max_buckets > 0 else set()
    buckets = []
    for r in rows:
        if r["bucket"] not in kept or str(r["variant"]) not in variants:
            continue
        errors, loops = int(r["errors"]), int(r["loops"])
        interval = stats.wilson(loops, errors)
        buckets.append(Bucket(r["bucket"], str(r["variant"]), errors, loops, loops / errors if errors else None,
                              interval.low if interval else None, interval.high if interval else None,
                              r.get("first_ts"), r.get("last_ts")))
    every = {str(r["variant"]) for r in rows}
    return LoopSeries(unit, tuple(buckets), len(starts) - len(kept), len(every) - len(variants))


def _top_variants(errors: Mapping[str, int], limit: int) -> set[str]:
    known = [v for v in ("legacy", "structured") if v in errors]
    others = sorted((v for v in errors if v not in known), key=lambda v: (-errors[v], v))
    return set((known + others)[:limit])


def code_counts(models: ModelEngine, tools: Sequence[str], *, tool: str | None = None,
                since: dt.datetime | None = None, until: dt.datetime | None = None,
                max_codes: int = MAX_CODES) -> tuple[CodeCount, ...]:
    """Errors per tool and code for ``tools``; codes beyond the ``max_codes`` most frequent are summed per tool
    under the code ``OTHER_CODES``."""
    wanted = set(tools)
    rows = [r for r in models.records("dashboard_code_mix", {"tool": tool, "since": since, "until": until})
            if r["tool"] in wanted]
    totals: dict[str, int] = {}
    for r in rows:
        code = NO_CODE if r["code"] is None else str(r["code"])
        totals[code] = totals.get(code, 0) + int(r["errors"])
    top = set(sorted(totals, key=lambda c: (-totals[c], c))[:max_codes])
    merged: dict[tuple[str, str], list[int]] = {}
    for r in rows:
        code = NO_CODE if r["code"] is None else str(r["code"])
        key = (str(r["tool"]), code if code in top else OTHER_CODES)
        counts = merged.setdefault(key, [0, 0])
        counts[0] += int(r["errors"])
        counts[1] += int(r["unmapped"])
    return tuple(CodeCount(t, c, e, u) for (t, c), (e, u) in merged.items())


def tool_readiness(tool: ToolReport, thresholds: Thresholds) -> ToolReadiness:
    """The gate's count checks on a tool's report row: calls, errors, unmapped share, schema-invalid payloads."""
    checks = count_checks(tool.calls, tool.judged_errors, tool.unmapped_errors, tool.schema_invalid_calls, thresholds)
    reasons = [check.advice for check in checks if not check.passed]
    return ToolReadiness(tool.tool, not reasons, tuple(reasons), tool.calls, tool.errors, tool.unmapped_errors,
                         tool.unmapped_share, tool.schema_invalid_calls, tool.schema_invalid_share)


def collect(
    models: ModelEngine,
    *,
    tool: str | None = None,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    subtitle: str | None = None,
    thresholds: Thresholds | None = None,
    seed: int = DEFAULT_SEED,
    max_tools: int = MAX_TOOLS,
    max_buckets: int = MAX_BUCKETS,
    rules: Rules | None = None,
    rules_name: str = "the given rules",
) -> DashboardData:
    """Run the loop-rate report and the dashboard's own queries; cap what is drawn.

    With ``rules`` (named ``rules_name`` on the page), the report translates every logged error again with them.

    ``models`` is where the SQL models run: a synced ``Warehouse`` (DuckDB, or DuckDB over a Parquet export) or
    ``SparkModels`` (Spark over a Parquet export); only small aggregates come back from either.

    Raises what ``loop_rate_report`` raises: ``WarehouseError`` when the warehouse is empty, ``UnknownToolError``
    for a ``tool`` with no calls, ``ValueError`` for ``since`` not before ``until``.
    """
    if not models.is_synced():
        raise WarehouseError("the warehouse is empty; run `shadow sync` first (or drop --no-sync)")
    report = loop_rate_report(models, tool=tool, since=since, until=until, seed=seed, rules=rules,
                              rules_name=rules_name)
    limits = thresholds or Thresholds()
    f = report.filters
    notices: list[str] = []
    ranked = sorted(report.by_tool, key=lambda t: (-t.calls, t.tool))
    shown = tuple(ranked[:max_tools])
    if len(ranked) > len(shown):
        notices.append(f"The per-tool charts show the {len(shown)} busiest of {len(ranked)} tools; "
                       "use --tool to look at any other.")
    unit = choose_unit(report.data_range.first_call, report.data_range.last_call)
    series = loop_series(models, unit, tool=f.tool, since=f.since, until=f.until, max_buckets=max_buckets)
    if series.dropped:
        notices.append(f"The loop-rate chart shows the latest {max_buckets} {unit}s; {series.dropped} older "
                       f"{unit}s are left out (use --since to choose the window).")
    if series.variants_dropped:
        notices.append(f"The loop-rate chart leaves out {series.variants_dropped} arms (variants other than "
                       "legacy and structured with the fewest errors).")
    codes = code_counts(models, [t.tool for t in shown], tool=f.tool, since=f.since, until=f.until)
    if any(c.code == OTHER_CODES for c in codes):
        notices.append(f"The code mix shows the {MAX_CODES} most frequent codes; the rest are summed as "
                       f"'{OTHER_CODES}'.")
    changes = report.flag_changes
    if len(changes) > MAX_FLAG_CHANGES:
        notices.append(f"The flag history lists the latest {MAX_FLAG_CHANGES} of {len(changes)} changes "
                       "(`shadow flags history` lists them all).")
        changes = changes[-MAX_FLAG_CHANGES:]
    return DashboardData(
        report=report, series=series, tools=shown, readiness=tuple(tool_readiness(t, limits) for t in shown),
        code_mix=codes, flag_changes=tuple(changes), thresholds=limits, notices=tuple(notices), subtitle=subtitle,
        generated_at=dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0),
    )


def looped_sessions(models: ModelEngine, *, tool: str | None = None, since: dt.datetime | None = None,
                    until: dt.datetime | None = None, limit: int = 10) -> tuple[LoopedSession, ...]:
    """The sessions with the most errors followed by an identical repeat, most loops first."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    rows = models.records("dashboard_looped_sessions",
                    {"tool": tool, "since": since, "until": until, "limit": limit})
    return tuple(LoopedSession(**r) for r in rows)


def session_events(models: ModelEngine, session_id: str, *, limit: int = 500) -> tuple[SessionEvent, ...]:
    """The calls and marks of one session in order (the first ``limit``); ``LookupError`` when it has none."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    rows = models.records("dashboard_session_events", {"session_id": session_id, "limit": limit})
    if not rows:
        raise LookupError(f"the warehouse has no calls or marks of session {session_id!r}; pick one from "
                          "looped_sessions(warehouse), or run `shadow sync` if it is new")
    return tuple(SessionEvent(**r) for r in rows)


def render_session(events: Sequence[SessionEvent], *, payloads: bool = True, width: int = 140) -> str:
    """One session as a text table for a terminal or notebook: each call with its arm, outcome, code and what
    followed it, identical repeats marked; under each error (``payloads``) what each arm would have served."""
    head = ("#", "seq", "event", "tool", "arm", "outcome", "code", "next_action", "then", "repeat")
    rows = [[str(i + 1), str(e.seq), e.kind, e.tool or "", e.variant or "", e.outcome or "", e.code or "",
             e.next_action or "", e.follow_up or "", "same call again" if e.repeats_previous else ""]
            for i, e in enumerate(events)]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
    for event, row in zip(events, rows, strict=True):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if payloads and event.outcome == "error":
            for label, value in (("legacy served", event.legacy_payload), ("structured", event.new_payload)):
                shown = (value or "null").replace("\n", " ")
                lines.append(f"      {label}: {shown[:width] + ' ...' if len(shown) > width else shown}")
    return "\n".join(lines) + "\n"
