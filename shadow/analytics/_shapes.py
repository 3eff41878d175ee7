"""Session shapes (``report_sessions``): errors, loops and give-ups per arm, and the two-arm comparison on them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from shadow.analytics import _stats as stats
from shadow.analytics._report_types import Comparison

#: The ways of giving up after an error that ``report_sessions`` counts (README, "Giving up").
Quit = Literal["gives", "ends", "stops"]
QUITS: Final[tuple[Quit, ...]] = ("gives", "ends", "stops")


@dataclass(frozen=True, slots=True)
class Shape:
    """Sessions sharing one shape of errors, loops and give-ups per arm (``report_sessions``)."""

    tool: str | None
    errors_a: int
    loops_a: int
    errors_b: int
    loops_b: int
    split: stats.PairedCluster
    weight: int
    quits: Mapping[Quit, tuple[int, int, stats.PairedCluster]] = dataclasses.field(default_factory=dict)

    @property
    def paired(self) -> stats.PairedCluster:
        return stats.PairedCluster(self.errors_a, self.loops_a, self.errors_b, self.loops_b, self.weight)

    def giving_up(self, kind: Quit) -> Shape:
        """The same sessions with one kind of give-up in place of loops: its share compared as the loop rate is."""
        a, b, split = self.quits.get(kind, (0, 0, self.split))
        return Shape(self.tool, self.errors_a, a, self.errors_b, b, split, self.weight)

    def arm(self, variant: str) -> stats.Cluster:
        if variant == "legacy":
            return stats.Cluster(self.errors_a, self.loops_a, self.weight)
        return stats.Cluster(self.errors_b, self.loops_b, self.weight)


def shapes(rows: Sequence[Mapping[str, Any]]) -> list[Shape]:
    """The shapes of ``report_sessions`` rows."""
    out = []
    for r in rows:
        n = int(r["sessions"])
        split_a, split_b = int(r["split_errors_a"]), int(r["split_errors_b"])
        quits = {k: (int(r[f"{k}_a"]), int(r[f"{k}_b"]),
                     stats.PairedCluster(split_a, int(r[f"split_{k}_a"]), split_b, int(r[f"split_{k}_b"]), n))
                 for k in QUITS}
        out.append(Shape(None if r["all_tools"] else r["tool"], int(r["errors_a"]), int(r["loops_a"]),
                         int(r["errors_b"]), int(r["loops_b"]),
                         stats.PairedCluster(split_a, int(r["split_loops_a"]), split_b, int(r["split_loops_b"]), n),
                         n, quits))
    return out


def comparison(scope: str, found: Sequence[Shape], opts: Mapping[str, int]) -> Comparison:
    """The two-arm test: on the randomised split when both arms have errors in it, else observational."""
    split = [s.split for s in found]
    if sum(c.errors_a * c.weight for c in split) and sum(c.errors_b * c.weight for c in split):
        return Comparison(scope, "randomised", stats.compare_arms(split, **opts))
    every = [s.paired for s in found]
    oa, ob = sum(c.errors_a * c.weight for c in every), sum(c.errors_b * c.weight for c in every)
    test = stats.compare_arms(every, **opts)
    if oa and ob:
        message = "observational, not randomised (no percentage split with errors in both arms): " + test.message
        return Comparison(scope, "observational", dataclasses.replace(test, message=message))
    message = (f"nothing to compare: only one arm has errors (legacy {oa}, structured {ob}); cut over a "
               "percentage of sessions to measure the difference") if oa or ob else "nothing to compare: no errors yet"
    return Comparison(scope, "none", dataclasses.replace(test, message=message))
