"""The cutover dashboard: aggregates, one function per chart, and the offline HTML page.

Its modules need the ``dashboard`` extra (``pip install 'shadow-errors[dashboard]'``), so the names below are
imported on first use: ``import shadow`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadow._lazy import lazy_names

if TYPE_CHECKING:
    from shadow.dashboard._data import DashboardData, collect
    from shadow.dashboard._page import DashboardServer, build_dashboard, figures, serve, write_dashboard

_WHERE = {
    "DashboardData": "shadow.dashboard._data",
    "DashboardServer": "shadow.dashboard._page",
    "build_dashboard": "shadow.dashboard._page",
    "collect": "shadow.dashboard._data",
    "figures": "shadow.dashboard._page",
    "serve": "shadow.dashboard._page",
    "write_dashboard": "shadow.dashboard._page",
}

__all__ = [
    "DashboardData",
    "DashboardServer",
    "build_dashboard",
    "collect",
    "figures",
    "serve",
    "write_dashboard",
]

__getattr__ = lazy_names(__name__, _WHERE)
