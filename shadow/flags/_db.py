"""Feature flags per tool: mode, cutover percentage, kill switch; stored with an audit log, cached with a TTL."""

from __future__ import annotations

import math
import os
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from shadow import _lazy as preload
from shadow._config import settings, sqlite_path
from shadow._logs import get_logger
from shadow.calllog import _sqlite as db
from shadow.calllog._sqlite import read_sqlite
from shadow.flags import _last_known as last_known
from shadow.flags._audit import FlagWrites, default_actor, rows_to_states
from shadow.flags._last_known import LastKnown
from shadow.flags._model import (
    ENV_VAR,
    KILL_SWITCH,
    LEGACY,
    AuditEntry,
    FlagState,
    Mode,
    Variant,
    bucket,
    check_percent,
    parse_env,
    parse_env_lenient,
    parse_mode,
)
from shadow.flags._start import await_start, is_pending, logs_any, origin, wait_for
from shadow.flags._static import StaticFlags
from shadow.typing import FlagSource

if TYPE_CHECKING:
    from sqlalchemy import Engine

__all__ = [
    "ENV_VAR",
    "KILL_SWITCH",
    "LEGACY",
    "AuditEntry",
    "DbFlags",
    "FlagState",
    "Mode",
    "StaticFlags",
    "Variant",
    "await_start",
    "bucket",
    "check_percent",
    "current",
    "default_actor",
    "is_pending",
    "logs_any",
    "origin",
    "parse_env",
    "parse_env_lenient",
    "parse_mode",
    "use",
    "wait",
    "wait_for",
]

log = get_logger("shadow.flags")


class DbFlags(FlagWrites):
    """Flags in the database (tables ``flags`` and ``flag_audit``), cached per process for ``ttl`` seconds.

    Loading and refreshing happen in a background thread, so a tool call never waits on the database once the
    flags are known. At start-up the last-known file (``_last_known``: what the last successful read, by any process
    of this flag database, found) is read first, in the calling thread: confirmed by a read at most ``ttl`` seconds
    ago, it is served at once; otherwise the first calls wait for the first read (``shadow._adapter``, at most
    ``flag_start_wait``), and a file at most ``last_known_max_age`` old is served when that read fails or the wait
    passes (``serve_last_known``). When the database becomes unreadable, the last flags read stay in force for
    ``stale_after`` seconds (default: 60, or 10 TTLs if longer), so a database blip does not flip tools; after that
    every tool is served legacy, as the kill switch would, until a read succeeds again. Changes made through this
    object apply at once here.
    """

    def __init__(self, url: str, *, ttl: float = 5.0, stale_after: float | None = None,
                 last_known: str | None = None, last_known_max_age: float | None = None) -> None:
        self.url = db.normalise_url(url)
        self.ttl = ttl if math.isfinite(ttl) and ttl >= 0 else 5.0  # a NaN or infinite TTL would never refresh
        bound = max(60.0, 10 * self.ttl) if stale_after is None else stale_after
        self.stale_after = bound if math.isfinite(bound) and bound >= 0 else 60.0
        self._last_known_setting = last_known
        self._last_known_max_age = last_known_max_age
        self._file_tried = False
        self._fallback: LastKnown | None = None  # a file too old to start on, kept for a failed start
        self._written: tuple[dict[str, FlagState], bool, float] | None = None  # what this process last wrote
        self._origin = "database"
        self._read_ok_at = 0.0
        self._stale_reported = False
        self._states: dict[str, FlagState] | None = None
        self._killed = False
        self._loaded_at = 0.0
        self._lock = threading.Lock()
        self._refreshing = False
        self._ready = False
        self._loaded = threading.Event()
        _instances.add(self)

    # -- reading (hot path)

    def state(self, tool: str) -> FlagState:
        """The cached flag of ``tool``; triggers a background refresh when older than the TTL."""
        states = self._states
        if states is None:
            if not self._file_tried:
                self._start_from_file()
                return self.state(tool)
            if not self._refreshing:
                self._refresh_soon()
            return LEGACY
        now = time.monotonic()
        if now - self._loaded_at > self.ttl and not self._refreshing:
            self._refresh_soon()
        if self._killed or now - self._read_ok_at > self.stale_after:
            return LEGACY
        return states.get(tool, LEGACY)

    def pending(self, tool: str) -> bool:
        """Whether no flags are known yet: neither a last-known file nor a finished first read."""
        if self._states is None and not self._file_tried:
            self._start_from_file()
        return self._states is None

    def origin(self, tool: str) -> str:
        """Where the flags in force come from: ``last_known`` (the file, until the first read) or ``database``."""
        return self._origin

    def logs_any(self) -> bool:
        """Whether any tool is in shadow or cutover (True while nothing is known)."""
        states = self._states
        if states is None:
            return True
        return not self._killed and any(s.mode is not Mode.LEGACY for s in states.values())

    def prefetch(self) -> None:
        """Start loading in the background now (before the first tool call needs the flags)."""
        if self._states is None and not self._file_tried:
            self._start_from_file()
        if self._loaded_at == 0.0 and not self._refreshing:
            self._refresh_soon()

    def wait(self, timeout: float | None = 5.0) -> bool:
        """Block until the first read of the database has finished (successfully or not); False on timeout."""
        self.prefetch()
        return self._loaded.wait(timeout)

    def _last_known_path(self) -> Path | None:
        choice = self._last_known_setting if self._last_known_setting is not None else settings().flags_last_known
        return last_known.path_for(self.url, choice)

    def _start_from_file(self) -> None:
        """Serve the last-known flags, if a usable file has them (read once, before the first database read)."""
        with self._lock:
            if self._file_tried:
                return
            self._file_tried = True
            try:
                path = self._last_known_path()
            except Exception:  # no home directory, say: start without a file
                path = None
            if path is None:
                return
            max_age = self._last_known_max_age
            found, why = last_known.read(path, last_known.url_key(self.url),
                                         settings().flags_last_known_max_age if max_age is None else max_age)
            if found is None:
                if why not in ("missing", "another flag database"):
                    log.warning("flags_last_known_unused", path=str(path), reason=why)
                return
            if time.time() - found.written_at > self.ttl:  # a change may have been made since: ask the database
                self._fallback = found
                return
            self._serve_file(found)

    def _serve_file(self, found: LastKnown) -> None:
        if self._states is not None:  # a read finished first
            return
        self._killed = found.killed
        self._read_ok_at = time.monotonic()
        self._origin = "last_known"
        self._written = (found.states, found.killed, self._read_ok_at - max(0.0, time.time() - found.written_at))
        self._states = found.states

    def serve_last_known(self) -> bool:
        """Serve the last-known file kept as a fallback, when no read has finished yet (the start wait passed, or
        the first read failed); whether it is served now."""
        with self._lock:
            found, self._fallback = self._fallback, None
            if found is None or self._states is not None:
                return False
            self._serve_file(found)
            return True

    def _refresh_soon(self) -> None:
        with self._lock:
            if self._refreshing:
                return
            self._refreshing = True
        threading.Thread(target=self._load, name="shadow-flags-refresh", daemon=True).start()

    def _load(self) -> None:
        try:
            states, killed, read = self._fetch()
        except Exception as exc:
            if self._states is None:
                self.serve_last_known()
            now = time.monotonic()
            stale = now - self._read_ok_at > self.stale_after
            if not self._stale_reported:
                serving = "legacy" if stale or self._states is None else "the last flags read"
                if os.environ.get(ENV_VAR):  # what SHADOW_FLAGS names is served as it says, whatever happens here
                    serving += f" to the tools {ENV_VAR} does not name"
                log.warning("flags_unreadable", url=db.safe_url(self.url), error_type=type(exc).__name__,
                            serving=serving, legacy_after_s=self.stale_after)
                self._stale_reported = stale
            if self._states is None:
                self._states = {}
            self._loaded_at = now
        else:
            old = self._states
            self._states, self._killed = states, killed
            self._loaded_at = self._read_ok_at = time.monotonic()
            self._origin = "database"
            self._stale_reported = False
            if old is not None and old != states:
                log.info("flags_changed", changed=sorted(k for k in states.keys() | old.keys()
                                                         if states.get(k) != old.get(k)))
            if read:
                self._remember(states, killed)
        finally:
            self._refreshing = False
            self._loaded.set()

    def _remember(self, states: dict[str, FlagState], killed: bool) -> None:
        """Write the last-known file when the flags changed, else renew its date: a new process starts on it only
        while it is at most a TTL old (never raises)."""
        written = self._written
        now = time.monotonic()
        if written is not None and written[0] == states and written[1] == killed and now - written[2] < self.ttl / 2:
            return
        try:
            path = self._last_known_path()
            if path is not None:
                last_known.confirm(path, last_known.url_key(self.url), states, killed)
        except Exception as exc:
            if written is None or written[2] >= 0:
                log.warning("flags_last_known_not_written", error_type=type(exc).__name__, error=str(exc)[:200])
            self._written = (states, killed, -1.0)  # warned: not again until a write succeeds
            return
        self._written = (states, killed, now)

    def _exists(self) -> bool:
        """False while the SQLite file is not there: reading flags never creates it (until then: all legacy)."""
        path = sqlite_path(self.url)
        return path is None or path.exists()

    def _engine(self) -> Engine:
        if not self._ready:
            from shadow.calllog import _migrate as migrate

            migrate.ensure(self.url)
            self._ready = True
        from shadow.calllog import _db as engines

        return engines.engine(self.url)

    def _fetch(self) -> tuple[dict[str, FlagState], bool, bool]:
        """Every stored flag, the kill switch, and whether the database was read at all (a missing SQLite file is
        not read: all legacy)."""
        path = sqlite_path(self.url)
        if path is None:
            return (*self._read(), True)
        if not path.exists():
            return {}, False, False
        return (*rows_to_states(read_sqlite(path)), True)

    def _read(self) -> tuple[dict[str, FlagState], bool]:
        # SQLAlchemy, the driver and Alembic, loaded by the first read (the refresh thread's) under the fork guard
        preload.load(*db.sql_modules(self.url))
        from sqlalchemy import select

        from shadow.calllog import _migrate as migrate
        from shadow.calllog import _tables as tables

        migrate.load_alembic()
        with self._engine().connect() as conn:
            rows = conn.execute(select(tables.flags.c.tool, tables.flags.c.mode, tables.flags.c.percent)).all()
        return rows_to_states([tuple(row) for row in rows])

    def invalidate(self) -> None:
        """Re-read the flags now, in this thread (after a change; an admin path, never the hot path)."""
        self._load()

    # -- writing (CLI and admin code)

    def states(self) -> tuple[dict[str, FlagState], bool]:
        """Every stored flag, and whether the kill switch is on (read now, not cached; nothing is created)."""
        return self._read() if self._exists() else ({}, False)

_lock = threading.Lock()
_source: FlagSource | None = None


def current() -> FlagSource:
    """The process-wide flag source: ``SHADOW_FLAGS`` pins in front of the database's flags."""
    global _source
    found = _source
    if found is not None:
        return found
    with _lock:
        if _source is None:
            from shadow._config import Problem, is_otlp_url, report_once, settings

            current_settings = settings()
            source: FlagSource = StaticFlags({})  # records go to a collector: flags come from SHADOW_FLAGS only
            if not is_otlp_url(current_settings.db_url):
                stored = DbFlags(current_settings.db_url, ttl=current_settings.flag_ttl,
                                 last_known=current_settings.flags_last_known,
                                 last_known_max_age=current_settings.flags_last_known_max_age)
                stored.prefetch()
                source = stored
            pinned = os.environ.get(ENV_VAR)
            if pinned:
                states, problems = parse_env_lenient(pinned)
                for problem in problems:
                    example = "'search=shadow,book=cutover:25'"
                    report_once(Problem(ENV_VAR, pinned, f"is not valid ({problem})", example))
                source = StaticFlags(states, fallback=source, source="env")
            _source = source
        return _source


_instances: weakref.WeakSet[DbFlags] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """The parent's locks may be held and its refresh thread does not exist here: start both afresh.

    With ``flags_after_fork="inherit"`` (the default) the child serves the flags its parent had (and refreshes them
    after the TTL, as the parent would); with ``"reload"`` it starts as a new process does: the last-known file,
    then its own first read (with the start wait).
    """
    global _lock
    _lock = threading.Lock()
    try:
        reload = settings().flags_after_fork == "reload"
    except Exception:
        reload = False
    for flags in list(_instances):
        flags._lock = threading.Lock()
        flags._refreshing = False
        flags._loaded = threading.Event()  # its own lock may be held too; set again when the flags were loaded
        if reload:
            flags._states, flags._file_tried, flags._loaded_at, flags._origin = None, False, 0.0, "database"
            flags._fallback = None
        elif flags._states is not None:
            flags._loaded.set()


os.register_at_fork(after_in_child=_after_fork_in_child)


def wait(timeout: float | None = 5.0) -> bool:
    """Block until the process-wide flags are loaded (at start-up, when the first calls must follow them)."""
    return wait_for(current(), timeout)


def use(source: FlagSource | None) -> None:
    """Replace the process-wide flag source (``None``: rebuild it from settings on next use)."""
    global _source
    with _lock:
        _source = source
