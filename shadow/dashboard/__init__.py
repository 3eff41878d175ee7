"""The cutover dashboard: aggregates, one function per chart, and the offline HTML page.

Its modules need the ``dashboard`` extra (``pip install 'shadow-errors[dashboard]'``), so the names below are
imported on first use: ``import shadow`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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


def __getattr__(name: str) -> object:
    """Import a name of this subpackage on first use."""
    try:
        module = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return getattr(importlib.import_module(module), name)
