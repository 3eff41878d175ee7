"""The loop-rate report's result types (frozen dataclasses) and their documented JSON shape."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from shadow.analytics import _stats as stats
from shadow.analytics._evidence import Evidence
from shadow.analytics._health import LogHealth
from shadow.analytics._power import Power
from shadow.analytics._recommend import FlagNow, Recommendation

SCHEMA_VERSION: Final = 2
VARIANTS: Final = ("legacy", "structured")
#: What followed an error; "unknown": records are missing right after it (a gap in the session's seqs), so it is
#: left out of the loop rate's denominator.
FOLLOW_UPS: Final = ("repeat", "repair", "other_tool", "user_turn", "end", "nothing", "unknown")
Design = Literal["randomised", "observational", "none"]
By = Literal["tool", "code", "day"]


class UnknownToolError(ValueError):
    """``--tool`` names a tool the warehouse has no calls of."""


@dataclass(frozen=True, slots=True)
class ArmStats:
    """Loop statistics of one arm (``variant``) within a group of errors."""

    variant: str
    calls: int
    sessions: int | None  # sessions with an error in the group (the clusters); None where not counted
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
    flag: FlagNow | None = None  # the flag as the audit log last set it
    power: Power | None = None
    recommendation: Recommendation | None = None
    leaks: int | None = None  # errors whose structured payload holds traceback text or paths (scanned, capped)
    evidence: Evidence | None = None
    give_ups: Comparison | None = None  # the share of errors after which the session ended, arm against arm
    ended_soon: Comparison | None = None  # the share of errors the session ended within N calls of
    stop_quits: Comparison | None = None  # the share of errors answered `stop` the session ended within N calls of
    no_longer_errors: int = 0  # logged errors the rules the report was given read as successes

    @property
    def judged_errors(self) -> int:
        """The errors the gate counts: those logged, less the ones the given rules no longer read as errors."""
        return self.errors - self.no_longer_errors


@dataclass(frozen=True, slots=True)
class Savings:
    """What the structured payload saves, from the randomised comparison: round trips, tool seconds and tokens per
    task and per 1,000 tasks, with an interval; ``wasted_per_error_*`` are the randomised arms' loop rates."""

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
    design: str = "none"  # "randomised" when the figures come from the randomised comparison, else nothing claimed
    round_trips_saved_ci_low: float | None = None  # 95% interval of round_trips_saved_per_1000_tasks
    round_trips_saved_ci_high: float | None = None
    tokens_per_round_trip: float | None = None  # (mean bytes of arguments + legacy error payload) / bytes_per_token
    bytes_per_token: float = 4.0
    tokens_saved_per_1000_tasks: float | None = None
    leaves_out: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FollowUpShift:
    """Structured minus legacy share of errors followed by ``follow_up``, with a 95% interval (sessions as
    clusters, the two arms' estimates taken as independent)."""

    follow_up: str
    legacy_share: float | None
    structured_share: float | None
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    legacy_errors: int
    structured_errors: int


@dataclass(frozen=True, slots=True)
class FollowUpShifts:
    """Every follow-up's shift; ``design`` says whether it comes from the randomised split or all errors."""

    design: str  # "randomised", "observational" or "none"
    shifts: tuple[FollowUpShift, ...]


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
    simulated_calls: int = 0  # calls with source 'simulated' (shadow demo): the output says so
    sessions_with_gaps: int = 0  # sessions with missing records (dropped, or a crashed process)
    synthetic_time_calls: int = 0  # calls imported without a time (source 'import-synthetic-time'): the output says so


def synthetic_time_note(data: DataRange) -> str | None:
    """What to say when calls in the range carry synthetic times (imported without one), else None."""
    if not data.synthetic_time_calls:
        return None
    return (f"Synthetic times: {data.synthetic_time_calls:,} of {data.calls:,} calls were imported without a time "
            "(source 'import-synthetic-time'); theirs stand in (the file's modification time, in order), so "
            "--since, per-day rows and savings do not say when they happened.")


@dataclass(frozen=True, slots=True)
class RulesRow:
    """One tool's calls translated by one version of its rules (``rules_fingerprint``; None: logged before
    fingerprints were stored), with their errors, unmapped share and loop rate."""

    tool: str
    rules_fingerprint: str | None
    calls: int
    errors: int
    unmapped_errors: int
    unmapped_share: float | None  # of errors
    loops: int
    loop_rate: float | None  # loops / errors without a gap after them
    first_call: dt.datetime | None
    last_call: dt.datetime | None


def rules_note(report: LoopRateReport) -> str:
    """Which rules the recommendations judge the logged errors by, in a sentence."""
    if report.rules == "as logged":
        return ("Errors are classified by the rules in force when each call was logged (--rules MODULE or "
                "SHADOW_RULES: translate them again with yours).")
    gone = sum(t.no_longer_errors for t in report.by_tool)
    tail = f"; {gone:,} of them no longer read as errors" if gone else ""
    return f"Every logged error is translated again with {report.rules}{tail}."


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
    follow_up_shifts: FollowUpShifts | None = None
    health: LogHealth | None = None
    rules: str = "as logged"  # which rules classified the errors: as logged, or the ones given (translated again)
    by_rules: tuple[RulesRow, ...] = ()  # per tool and version of its rules

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON-ready values (times as ISO 8601 UTC strings)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "generated_at": iso(self.generated_at),
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
            "follow_up_shifts": _plain(self.follow_up_shifts),
            "health": _plain(self.health),
            "rules": self.rules,
            "by_rules": [_plain(r) for r in self.by_rules],
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


def iso(value: dt.datetime | dt.date | None) -> str | None:
    """A time as ISO 8601 UTC with a ``Z``, a date as ``YYYY-MM-DD``, None as None."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None).isoformat() + "Z"
    return value.isoformat()


def _plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dt.datetime | dt.date):
        return iso(obj)
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
