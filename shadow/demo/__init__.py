"""``shadow demo``: simulated agent traffic through shadow and cutover, then the report and the dashboard."""

from __future__ import annotations

from shadow.demo._run import SIMULATED, DemoResult, run_demo
from shadow.demo._simulate import FleetResult, run_fleet

__all__ = [
    "SIMULATED",
    "DemoResult",
    "FleetResult",
    "run_demo",
    "run_fleet",
]
