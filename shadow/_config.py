"""Settings: where the call log lives, size limits, the flag TTL, the writer's queue; env vars and ``configure``."""

from __future__ import annotations

import dataclasses
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

DEFAULT_DB_URL: Final = "sqlite:///shadow.db"

_ENV: Final = {
    "db_url": "SHADOW_DB_URL",
    "warehouse": "SHADOW_WAREHOUSE",
    "spool_path": "SHADOW_SPOOL",
    "flag_ttl": "SHADOW_FLAG_TTL",
    "strict": "SHADOW_STRICT",
}


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything tunable. Defaults suit one laptop; ``SHADOW_*`` variables and ``configure`` override."""

    db_url: str = DEFAULT_DB_URL
    warehouse: str | None = None  # DuckDB file; default: beside the SQLite store, else ./shadow.duckdb
    spool_path: str | None = None  # append-only file for records the database could not take
    flag_ttl: float = 5.0  # seconds a process trusts its cached flags
    max_args_bytes: int = 8192  # stored arguments, after redaction
    max_payload_bytes: int = 16384  # stored legacy payload, after redaction
    queue_size: int = 10000  # records waiting for the writer
    batch_size: int = 500  # records per insert
    flush_interval: float = 0.5  # seconds between flushes of a partial batch
    spool_max_bytes: int = 256 * 1024 * 1024
    strict: bool = False  # re-raise failures inside the shadow machinery (for tests)

    def warehouse_path(self) -> Path:
        """The DuckDB warehouse file."""
        if self.warehouse:
            return Path(self.warehouse)
        sqlite = sqlite_path(self.db_url)
        if sqlite is not None:
            return sqlite.with_suffix(".duckdb")
        return Path("shadow.duckdb")

    def spool_file(self) -> Path:
        """The spool file for records the database could not take."""
        if self.spool_path:
            return Path(self.spool_path)
        sqlite = sqlite_path(self.db_url)
        base = sqlite.with_suffix("") if sqlite is not None else Path("shadow")
        return base.with_name(base.name + f".{os.getpid()}.spool")


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///`` URL, or None for other databases and in-memory SQLite."""
    prefix = "sqlite:///"
    if url.startswith("sqlite+pysqlite:///"):
        url = "sqlite:///" + url[len("sqlite+pysqlite:///"):]
    if not url.startswith(prefix):
        return None
    rest = url[len(prefix):].split("?", 1)[0]
    if rest in ("", ":memory:"):
        return None
    return Path(rest)


def _from_env() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, var in _ENV.items():
        raw = os.environ.get(var)
        if raw is None or raw == "":
            continue
        if name == "flag_ttl":
            try:
                out[name] = float(raw)
            except ValueError:
                raise ValueError(f"{var}={raw!r} is not a number of seconds, for example {var}=5") from None
        elif name == "strict":
            out[name] = raw.lower() in {"1", "true", "yes", "on"}
        else:
            out[name] = raw
    return out


_lock = threading.Lock()
_current: Settings | None = None


def settings() -> Settings:
    """The settings in force: ``configure`` calls over ``SHADOW_*`` variables over defaults."""
    global _current
    found = _current
    if found is not None:
        return found
    with _lock:
        if _current is None:
            _current = Settings(**_from_env())
        return _current


def configure(**changes: Any) -> Settings:
    """Change settings for this process, for example ``configure(db_url="postgresql+psycopg://...")``."""
    global _current
    unknown = set(changes) - {f.name for f in dataclasses.fields(Settings)}
    if unknown:
        names = ", ".join(f.name for f in dataclasses.fields(Settings))
        raise TypeError(f"unknown setting(s) {sorted(unknown)}; known: {names}")
    if "db_url" in changes:
        from shadow.calllog._db import normalise_url

        normalise_url(changes["db_url"])  # a URL shadow cannot use is a ValueError here, not a log line later
    base = settings()
    with _lock:
        _current = dataclasses.replace(base, **changes)
        return _current


def reset() -> None:
    """Forget ``configure`` calls and re-read the environment on next use (tests)."""
    global _current
    with _lock:
        _current = None
