"""Per-tool feature flags: mode, cutover percentage, kill switch; the database source and its process-wide cache."""

from __future__ import annotations

from shadow.flags._db import (
    KILL_SWITCH,
    LEGACY,
    AuditEntry,
    DbFlags,
    FlagState,
    Mode,
    StaticFlags,
    Variant,
    bucket,
    current,
    parse_mode,
    use,
    wait,
)
from shadow.typing import FlagSource

__all__ = [
    "KILL_SWITCH",
    "LEGACY",
    "AuditEntry",
    "DbFlags",
    "FlagSource",
    "FlagState",
    "Mode",
    "OpenFeatureFlags",
    "StaticFlags",
    "Variant",
    "bucket",
    "current",
    "parse_mode",
    "use",
    "wait",
]


def __getattr__(name: str) -> object:
    """``OpenFeatureFlags`` needs the ``openfeature`` extra, so it is imported on first use."""
    if name == "OpenFeatureFlags":
        from shadow.flags._openfeature import OpenFeatureFlags

        return OpenFeatureFlags
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
