"""Power of the two-arm test: the closed form with a design effect, statsmodels without clustering, and the report."""

from __future__ import annotations

import math
import random
from statistics import NormalDist

import pytest

from shadow.analytics import _power as pw
from shadow.analytics._stats import Cluster


def closed_form(p1: float, p2: float, alpha: float, power: float, deff: float) -> float:
    """Fleiss' two-proportion sample size without continuity correction (unpooled), inflated by ``deff``."""
    z_a, z_b = NormalDist().inv_cdf(1 - alpha / 2), NormalDist().inv_cdf(power)
    return deff * (z_a + z_b) ** 2 * (p1 * (1 - p1) + p2 * (1 - p2)) / (p1 - p2) ** 2


@pytest.mark.parametrize(("p1", "reduction", "deff"), [(0.5, 0.3, 1.0), (0.5, 0.3, 1.5), (0.2, 0.5, 2.3),
                                                       (0.45, 0.1, 1.0), (0.9, 0.3, 3.0)])
def test_errors_needed_match_the_closed_form_with_a_design_effect(p1: float, reduction: float, deff: float) -> None:
    expected = closed_form(p1, p1 * (1 - reduction), 0.05, 0.8, deff)
    assert pw.errors_needed(p1, reduction, design_effect=deff) == math.ceil(expected - 1e-9)


def test_a_worked_example_by_hand() -> None:
    """50% looping, a 30% drop to 35%: (1.95996 + 0.84162)^2 * (0.25 + 0.2275) / 0.15^2 = 166.53 -> 167 per arm;
    with sessions doubling the variance, 333.06 -> 334."""
    assert pw.errors_needed(0.5, 0.3) == 167
    assert pw.errors_needed(0.5, 0.3, design_effect=2.0) == 334


@pytest.mark.parametrize(("p1", "reduction", "power", "alpha"), [(0.5, 0.3, 0.8, 0.05), (0.3, 0.2, 0.9, 0.05),
                                                                  (0.6, 0.5, 0.8, 0.01), (0.12, 0.4, 0.85, 0.1)])
def test_without_clustering_it_matches_statsmodels_normal_ind_power(p1: float, reduction: float, power: float,
                                                                    alpha: float) -> None:
    from statsmodels.stats.power import NormalIndPower

    p2 = p1 * (1 - reduction)
    effect = (p1 - p2) / math.sqrt((p1 * (1 - p1) + p2 * (1 - p2)) / 2)
    n = NormalIndPower().solve_power(effect_size=effect, alpha=alpha, power=power, ratio=1.0,
                                     alternative="two-sided")
    assert pw.errors_needed(p1, reduction, power=power, alpha=alpha) == math.ceil(n - 1e-9)


def test_the_design_effect_is_the_clustered_over_the_binomial_variance() -> None:
    rng = random.Random(5)
    independent = [Cluster(1, int(rng.random() < 0.4)) for _ in range(3000)]
    assert pw.design_effect(independent) == pytest.approx(1.0, abs=0.1)
    # whole sessions loop or not: 5 errors each, all looping or none -> deff close to 5
    clustered = [Cluster(5, 5 if rng.random() < 0.4 else 0) for _ in range(600)]
    assert pw.design_effect(clustered) == pytest.approx(5.0, rel=0.1)
    assert pw.design_effect([]) == 1.0


def test_tool_power_counts_what_is_left_and_how_many_days() -> None:
    p = pw.tool_power(0.5, 100, 40, [], errors_per_day=20.0,
                      structured_share=0.25)
    assert p.errors_per_arm_needed == 167 and p.more_errors_per_arm == 127
    assert p.errors_per_day_per_arm == pytest.approx(5.0)  # the 25% arm gets a quarter of 20 a day
    assert p.days_needed == pytest.approx(127 / 5.0)
    assert "127 more per arm" in p.message
    none = pw.tool_power(None, 0, 0, [], errors_per_day=None, structured_share=None)
    assert none.errors_per_arm_needed is None and "legacy" in none.message


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.2, 1.5])
def test_a_reduction_outside_0_to_1_is_refused_with_an_example(bad: float) -> None:
    with pytest.raises(ValueError, match="for example 0.3"):
        pw.errors_needed(0.5, bad)
