"""What to do next with each tool's flag: raise, hold, fix_rules, rollback or done, and why, in plain words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from shadow.analytics import _power as pw
from shadow.analytics import _stats as stats

Action = Literal["raise", "hold", "fix_rules", "rollback", "done"]
ACTIONS: Final = ("raise", "hold", "fix_rules", "rollback", "done")


@dataclass(frozen=True, slots=True)
class Policy:
    """The thresholds behind the recommendations; each default is documented in the README ("Recommendations").

    ``max_unmapped_share``, ``max_schema_invalid`` and ``max_leaks`` are the cutover gate's (``shadow ready``);
    ``min_errors`` is how many errors a tool must have logged before a first cutover; ``relative_reduction``,
    ``power`` and ``alpha`` define the test the power figures plan for; ``max_increase`` is how much higher (in
    loop-rate points) the structured arm may be, at the upper end of the 95% interval, for an inconclusive test
    with enough errors to still count as "not worse"; ``give_up_within`` is how many calls after an error a
    session may still make and count as ended by it (the give-up guard).
    """

    max_unmapped_share: float = 0.05
    max_schema_invalid: int = 0
    max_leaks: int = 0
    min_errors: int = 20
    relative_reduction: float = pw.DEFAULT_RELATIVE_REDUCTION
    power: float = pw.DEFAULT_POWER
    alpha: float = pw.DEFAULT_ALPHA
    max_increase: float = 0.02
    give_up_within: int = 3

    def __post_init__(self) -> None:
        for name in ("max_unmapped_share", "max_increase"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ValueError(f"{name} must be a fraction from 0 to 1, for example 0.05, not {value!r}")
        for name in ("max_schema_invalid", "max_leaks", "min_errors", "give_up_within"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a whole number of at least 0, not {value!r}")
        pw.errors_needed(0.5, self.relative_reduction, power=self.power, alpha=self.alpha)  # validates the three


@dataclass(frozen=True, slots=True)
class FlagNow:
    """A tool's flag as the audit log last set it; ``mode`` None when the log has no change for the tool."""

    mode: str | None
    percent: int | None

    @property
    def serving_structured(self) -> bool:
        return self.mode == "cutover" and (self.percent or 0) > 0

    @property
    def split(self) -> float | None:
        """The share of sessions served structured while a split runs (0 < percent < 100), else None."""
        if self.mode == "cutover" and self.percent is not None and 0 < self.percent < 100:
            return self.percent / 100
        return None

    def words(self) -> str:
        if self.mode is None:
            return "no flag change logged"
        return f"{self.mode} {self.percent}%" if self.mode == "cutover" else self.mode


@dataclass(frozen=True, slots=True)
class Recommendation:
    """One action for a tool's flag and the reasons, each a sentence a team lead can act on."""

    action: Action
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Facts:
    """What a recommendation rests on, for one tool."""

    errors: int
    unmapped_errors: int
    schema_invalid_calls: int
    leaks: int
    test: stats.ArmComparison
    design: str
    flag: FlagNow
    power: pw.Power
    give_ups: stats.ArmComparison | None = None  # sessions ended right after an error, structured vs legacy
    ended_soon: stats.ArmComparison | None = None  # sessions ended within a few calls of an error
    stop_quits: stats.ArmComparison | None = None  # errors answered `stop` the session ended within a few calls of


def _gate(f: Facts, p: Policy) -> list[str]:
    share = f.unmapped_errors / f.errors if f.errors else 0.0
    out = []
    if share > p.max_unmapped_share:
        out.append(f"{f.unmapped_errors:,} of {f.errors:,} errors ({share:.1%}) matched no rule (limit "
                   f"{p.max_unmapped_share:.0%}): add rules for the shapes listed under the evidence")
    if f.schema_invalid_calls > p.max_schema_invalid:
        out.append(f"{f.schema_invalid_calls:,} structured payloads failed the schema (limit {p.max_schema_invalid}):"
                   " fix the rules' messages and contexts")
    if f.leaks > p.max_leaks:
        out.append(f"{f.leaks:,} error payloads hold traceback text or file paths (limit {p.max_leaks}): move that "
                   "text out of the rules' messages")
    return out


def _need(f: Facts) -> str:
    pow_ = f.power
    if pow_.more_errors_per_arm is None:
        return pow_.message
    when = "" if pow_.days_needed is None else f" (about {pw._days(pow_.days_needed)} at the current rate)"
    return (f"{pow_.more_errors_per_arm:,} more errors per arm are needed to detect a {pow_.relative_reduction:.0%} "
            f"drop with {pow_.power:.0%} power{when}")


def recommend(f: Facts, policy: Policy | None = None) -> Recommendation:
    """The first rule that applies, in this order: rollback, fix_rules, done, raise, hold (see the README).

    A ``raise`` also needs the structured arm not to give up significantly more often, by any of three measures
    (sessions that end right after an error, that end within a few calls of one, errors answered ``stop`` that
    end the session): a lower loop rate bought by quitting the task is not a win, so that is a ``hold``."""
    found = _recommend(f, policy or Policy())
    if found.action != "raise":
        return found
    rose = [q.message for q in (f.give_ups, f.ended_soon, f.stop_quits)
            if q is not None and q.verdict == "structured_higher"]
    if rose:
        return Recommendation("hold", (*rose, "a lower loop rate bought by ending the task is not a win: check "
                                       "which codes tell the model to stop (the codes served under the evidence) "
                                       "before raising the cutover", *found.reasons[:1]))
    return found


def _recommend(f: Facts, p: Policy) -> Recommendation:
    t = f.test
    gate = _gate(f, p)
    if t.verdict == "structured_higher":
        why = t.message
        if f.flag.serving_structured:
            return Recommendation("rollback", (why, "set the flag back to shadow and fix the messages first"))
        return Recommendation("fix_rules", (why, *gate))
    if f.leaks > p.max_leaks and f.flag.serving_structured:
        return Recommendation("rollback", (f"{f.leaks:,} error payloads served to the model hold traceback text or "
                                           "file paths; set the flag back to shadow and fix the rules",))
    if gate:
        return Recommendation("fix_rules", tuple(gate))
    if f.flag.mode == "cutover" and f.flag.percent == 100:
        return Recommendation("done", ("every session is served the structured payload and the gate passes",))
    if t.verdict == "structured_lower" and f.design == "randomised":
        return Recommendation("raise", (t.message, f"raise the cutover above {f.flag.percent}%"))
    if not f.flag.serving_structured:
        if f.errors < p.min_errors:
            return Recommendation("hold", (f"only {f.errors:,} errors are logged; keep shadowing until at least "
                                           f"{p.min_errors} are, so every error path has been translated",))
        return Recommendation("raise", ("the gate passes in shadow mode; start a split, for example cutover 50%, "
                                        "so the two arms can be compared",))
    if t.verdict == "no_significant_difference" and f.design == "randomised" and f.power.more_errors_per_arm == 0:
        if t.ci_high is not None and t.ci_high <= p.max_increase:
            return Recommendation("raise", (
                f"no significant difference with enough errors to see a {p.relative_reduction:.0%} drop, and the "
                f"structured arm is at most {t.ci_high * 100:+.1f} points higher (95%): not worse", t.message))
        return Recommendation("hold", (t.message, f"the interval still allows the structured arm up to "
                                                  f"{(t.ci_high or 0) * 100:+.1f} points higher; keep the split"))
    if f.design != "randomised":
        return Recommendation("hold", (f"the flag is {f.flag.words()} but no randomised comparison has errors in "
                                       "both arms yet", _need(f)))
    return Recommendation("hold", (t.message if t.verdict != "too_few_errors" else "too few errors for a verdict",
                                   _need(f)))
