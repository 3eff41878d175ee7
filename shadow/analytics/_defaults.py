"""Defaults the analytics share with the command line, importable without the ``analytics`` extra."""

from __future__ import annotations

import datetime as dt
from typing import Final

#: How far back of the newest synced record an incremental sync looks again (late commits of other writers).
DEFAULT_MARGIN: Final = dt.timedelta(minutes=5)
#: DuckDB's memory cap for warehouse work (it spills to disk beyond it).
DEFAULT_MEMORY_LIMIT: Final = "192MB"
#: Seed of the session bootstrap, so the same data gives the same report.
DEFAULT_SEED: Final = 20250314
