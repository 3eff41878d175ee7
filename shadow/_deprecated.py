"""Import paths of 0.1 that moved in 0.2: they keep working for one release, with a ``DeprecationWarning``."""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from typing import Final

#: Old module (under ``shadow.``) -> where its names live now. The first is public, the second private.
MOVED: Final[dict[str, tuple[str, str]]] = {
    "adapter": ("shadow", "shadow._adapter"),
    "sessions": ("shadow", "shadow._sessions"),
    "config": ("shadow", "shadow._config"),
    "ids": ("shadow", "shadow._ids"),
    "clock": ("shadow", "shadow._clock"),
    "logs": ("shadow", "shadow._logs"),
    "fingerprint": ("shadow", "shadow._fingerprint"),
    "redact": ("shadow", "shadow._redact"),
    "loader": ("shadow", "shadow.cli._loader"),
    "codes": ("shadow.contract", "shadow.contract._codes"),
    "schema": ("shadow.contract", "shadow.contract._schema"),
    "rules": ("shadow.contract", "shadow.contract._rules"),
    "guard": ("shadow.contract", "shadow.contract._guard"),
    "describe": ("shadow.contract", "shadow.contract._describe"),
    "normalize_mcp": ("shadow.normalize", "shadow.normalize._mcp"),
    "flags_openfeature": ("shadow.flags", "shadow.flags._openfeature"),
    "records": ("shadow.calllog", "shadow.calllog._records"),
    "tables": ("shadow.calllog", "shadow.calllog._tables"),
    "db": ("shadow.calllog", "shadow.calllog._db"),
    "migrate": ("shadow.calllog", "shadow.calllog._migrate"),
    "store": ("shadow.calllog", "shadow.calllog._store"),
    "spool": ("shadow.calllog", "shadow.calllog._spool"),
    "writer": ("shadow.calllog", "shadow.calllog._writer"),
    "writer_thread": ("shadow.calllog", "shadow.calllog._writer_thread"),
    "warehouse": ("shadow.analytics", "shadow.analytics._warehouse"),
    "warehouse_source": ("shadow.analytics", "shadow.analytics._source"),
    "sql": ("shadow.analytics", "shadow.analytics._sql"),
    "stats": ("shadow.analytics", "shadow.analytics._stats"),
    "report": ("shadow.analytics", "shadow.analytics._report"),
    "report_types": ("shadow.analytics", "shadow.analytics._report_types"),
    "report_render": ("shadow.analytics", "shadow.analytics._render"),
    "ready": ("shadow.analytics", "shadow.analytics._ready"),
    "dashboard_data": ("shadow.dashboard", "shadow.dashboard._data"),
    "charts": ("shadow.dashboard", "shadow.dashboard._charts"),
    "inventory_emit": ("shadow.inventory", "shadow.inventory._emit"),
    "inventory_index": ("shadow.inventory", "shadow.inventory._index"),
    "inventory_model": ("shadow.inventory", "shadow.inventory._model"),
    "inventory_place": ("shadow.inventory", "shadow.inventory._place"),
    "inventory_scan": ("shadow.inventory", "shadow.inventory._scan"),
    "eval_classify": ("shadow.eval", "shadow.eval._classify"),
    "eval_client": ("shadow.eval", "shadow.eval._client"),
    "eval_examples": ("shadow.eval", "shadow.eval._examples"),
    "eval_legacy": ("shadow.eval", "shadow.eval._legacy"),
    "eval_report": ("shadow.eval", "shadow.eval._report"),
    "proxy_upstream": ("shadow.proxy", "shadow.proxy._upstream"),
    "importer": ("shadow.transcripts", "shadow.transcripts._importer"),
    "import_formats": ("shadow.transcripts", "shadow.transcripts._formats"),
    "import_otel": ("shadow.transcripts", "shadow.transcripts._otel"),
    "demo_tools": ("shadow.demo", "shadow.demo._tools"),
    "simulate": ("shadow.demo", "shadow.demo._simulate"),
}


class _Moved(types.ModuleType):
    """Stands at an old path; every name read from it warns and comes from the module it moved to."""

    def __getattr__(self, name: str) -> object:
        old = self.__name__
        public, private = MOVED[old.removeprefix("shadow.")]
        if name.startswith("__"):
            raise AttributeError(name)
        front = importlib.import_module(public)
        where = public if name in getattr(front, "__all__", ()) else private
        warnings.warn(
            f"{old}.{name} moved: import it from {where} ({old} goes away in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(private), name)


def install() -> None:
    """Put a stand-in for every old path into ``sys.modules``.

    Registered directly rather than imported, so that ``import shadow.guard`` never rebinds the package attribute
    ``shadow.guard`` (the function) to the stand-in, as a real submodule import would.
    """
    for old, (public, _private) in MOVED.items():
        sys.modules.setdefault(f"shadow.{old}", _Moved(f"shadow.{old}", f"Deprecated alias: moved to {public}."))


def module_getattr(name: str) -> types.ModuleType:
    """``shadow.<old>`` read as an attribute of the package (``import shadow; shadow.store``)."""
    if name in MOVED:
        return sys.modules[f"shadow.{name}"]
    raise AttributeError(f"module 'shadow' has no attribute {name!r}")
