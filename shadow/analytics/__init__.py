"""Loop-rate analytics: the DuckDB warehouse, the SQL models (package data), statistics, the report, readiness.

Its modules need the ``analytics`` extra (``pip install 'shadow-errors[analytics]'``), so the names below are
imported on first use: ``import shadow`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadow._lazy import lazy_names

if TYPE_CHECKING:
    from shadow.analytics._ready import Readiness, codes_for_tool, readiness
    from shadow.analytics._recommend import Policy, Recommendation
    from shadow.analytics._render import render_csv, render_table
    from shadow.analytics._report import loop_rate_report
    from shadow.analytics._report_types import LoopRateReport, UnknownToolError
    from shadow.analytics._source import SourceError, WarehouseError
    from shadow.analytics._spark import SparkModels
    from shadow.analytics._sql import models_dir
    from shadow.analytics._thresholds import Thresholds
    from shadow.analytics._warehouse import ExportResult, SyncResult, Warehouse, export_parquet, sync

_WHERE = {
    "ExportResult": "shadow.analytics._warehouse",
    "LoopRateReport": "shadow.analytics._report_types",
    "Policy": "shadow.analytics._recommend",
    "Readiness": "shadow.analytics._ready",
    "Recommendation": "shadow.analytics._recommend",
    "SourceError": "shadow.analytics._source",
    "SparkModels": "shadow.analytics._spark",
    "SyncResult": "shadow.analytics._warehouse",
    "Thresholds": "shadow.analytics._thresholds",
    "UnknownToolError": "shadow.analytics._report_types",
    "Warehouse": "shadow.analytics._warehouse",
    "WarehouseError": "shadow.analytics._source",
    "codes_for_tool": "shadow.analytics._ready",
    "export_parquet": "shadow.analytics._warehouse",
    "loop_rate_report": "shadow.analytics._report",
    "models_dir": "shadow.analytics._sql",
    "readiness": "shadow.analytics._ready",
    "render_csv": "shadow.analytics._render",
    "render_table": "shadow.analytics._render",
    "sync": "shadow.analytics._warehouse",
}

__all__ = [
    "ExportResult",
    "LoopRateReport",
    "Policy",
    "Readiness",
    "Recommendation",
    "SourceError",
    "SparkModels",
    "SyncResult",
    "Thresholds",
    "UnknownToolError",
    "Warehouse",
    "WarehouseError",
    "codes_for_tool",
    "export_parquet",
    "loop_rate_report",
    "models_dir",
    "readiness",
    "render_csv",
    "render_table",
    "sync",
]

__getattr__ = lazy_names(__name__, _WHERE)
