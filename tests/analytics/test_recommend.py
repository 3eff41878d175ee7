"""The recommendation rules on constructed aggregates: one case per action, and the order the rules apply in."""

from __future__ import annotations

import dataclasses

import pytest

from shadow.analytics import _power as pw
from shadow.analytics._recommend import Facts, FlagNow, Policy, recommend
from shadow.analytics._stats import ArmComparison


def comparison_of(verdict: str, *, diff: float | None = -0.2, ci: tuple[float, float] | None = (-0.3, -0.1),
                  errors: int = 200) -> ArmComparison:
    return ArmComparison(errors, 100, 50, errors, 60, 50, 0.5, 0.3, diff, ci[0] if ci else None,
                         ci[1] if ci else None, 0.001 if verdict.startswith("structured") else 0.4, None, None,
                         verdict, f"verdict {verdict}")  # type: ignore[arg-type]


SPLIT = FlagNow("cutover", 50)


def facts(verdict: str = "structured_lower", *, flag: FlagNow = SPLIT, design: str = "randomised",
          unmapped: int = 0, invalid: int = 0, leaks: int = 0, errors: int = 400, **test_kw: object) -> Facts:
    comparison = comparison_of(verdict, errors=errors // 2, **test_kw)  # type: ignore[arg-type]
    power = pw.tool_power(0.5, comparison.errors_a, comparison.errors_b, [],
                          errors_per_day=40.0, structured_share=flag.split)
    return Facts(errors, unmapped, invalid, leaks, comparison, design, flag, power)


def test_a_significantly_lower_structured_arm_during_a_split_means_raise() -> None:
    r = recommend(facts("structured_lower"))
    assert r.action == "raise" and "above 50%" in r.reasons[-1]


def test_a_significantly_higher_structured_arm_while_serving_it_means_rollback() -> None:
    r = recommend(facts("structured_higher", diff=0.2, ci=(0.1, 0.3)))
    assert r.action == "rollback" and "back to shadow" in r.reasons[-1]


def test_leaks_served_to_the_model_mean_rollback_even_when_the_arm_loops_less() -> None:
    assert recommend(facts("structured_lower", leaks=3)).action == "rollback"


def test_too_many_unmapped_errors_mean_fix_rules_with_the_share_in_the_reason() -> None:
    r = recommend(facts("structured_lower", unmapped=60))
    assert r.action == "fix_rules" and "60 of 400 errors (15.0%)" in r.reasons[0]
    assert recommend(facts(flag=FlagNow("shadow", 100), invalid=2)).action == "fix_rules"
    strict = Policy(max_unmapped_share=0.5)
    assert recommend(facts("structured_lower", unmapped=60), strict).action == "raise"


def test_a_full_cutover_that_passes_the_gate_is_done() -> None:
    assert recommend(facts("too_few_errors", flag=FlagNow("cutover", 100), diff=None, ci=None)).action == "done"


def test_too_few_errors_means_hold_and_says_how_many_more_and_how_long() -> None:
    r = recommend(facts("too_few_errors", diff=None, ci=None, errors=20))
    assert r.action == "hold"
    assert any("more errors per arm" in reason and "days" in reason for reason in r.reasons)


def test_shadow_mode_with_enough_errors_and_a_clean_gate_means_start_a_split() -> None:
    assert recommend(facts("too_few_errors", flag=FlagNow("shadow", 100), diff=None, ci=None)).action == "raise"
    few = recommend(facts("too_few_errors", flag=FlagNow("shadow", 100), diff=None, ci=None, errors=5))
    assert few.action == "hold" and "at least 20" in few.reasons[0]


def test_an_inconclusive_test_with_enough_power_raises_only_when_not_worse() -> None:
    flat = facts("no_significant_difference", diff=0.0, ci=(-0.04, 0.01), errors=400)
    assert flat.power.more_errors_per_arm == 0
    assert recommend(flat).action == "raise"
    wide = facts("no_significant_difference", diff=0.02, ci=(-0.02, 0.06), errors=400)
    assert recommend(wide).action == "hold"
    short = facts("no_significant_difference", diff=0.0, ci=(-0.04, 0.01), errors=50)
    assert recommend(short).action == "hold"


def test_an_observational_comparison_never_raises_on_its_own() -> None:
    r = recommend(facts("structured_lower", design="observational"))
    assert r.action == "hold" and "randomised" in r.reasons[0]


@pytest.mark.parametrize(("field", "value"), [("max_unmapped_share", 1.5), ("min_errors", -1),
                                              ("relative_reduction", 0.0), ("power", 1.0)])
def test_policy_refuses_nonsense_thresholds(field: str, value: float) -> None:
    with pytest.raises(ValueError, match="for example|at least 0"):
        dataclasses.replace(Policy(), **{field: value})


def test_the_flag_now_is_the_tools_latest_change_unless_the_kill_switch_is_newer() -> None:
    import datetime as dt

    from shadow.analytics._decisions import flag_now
    from shadow.analytics._report_types import FlagChange

    t0 = dt.datetime(2025, 3, 1)

    def change(tool: str, hours: int, mode: str, percent: int) -> FlagChange:
        return FlagChange(tool, t0 + dt.timedelta(hours=hours), None, None, mode, percent, "ana", None, False)

    history = [change("a", 0, "shadow", 100), change("a", 2, "cutover", 25)]
    assert flag_now("a", history) == FlagNow("cutover", 25) and flag_now("a", history).split == 0.25
    assert flag_now("b", history) == FlagNow(None, None)
    killed = [*history, change("*", 3, "killed", 100)]
    assert flag_now("a", killed) == FlagNow("legacy", None)
    assert flag_now("a", [*killed, change("*", 4, "active", 100)]) == FlagNow("cutover", 25)
