"""Feature flags per tool: mode, cutover percentage, kill switch; stored with an audit log, cached with a TTL."""

from __future__ import annotations

import math
import os
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadow import _clock as clock
from shadow._config import settings, sqlite_path
from shadow._ids import new_id
from shadow._logs import get_logger
from shadow.calllog import _sqlite as db
from shadow.calllog._sqlite import read_sqlite
from shadow.flags import _last_known as last_known
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


class StaticFlags:
    """Flags fixed in memory, for example from ``SHADOW_FLAGS`` in front of the database."""

    def __init__(self, states: Mapping[str, FlagState], fallback: FlagSource | None = None, *,
                 source: str = "custom") -> None:
        self.states = dict(states)
        self.fallback = fallback
        self.source = source  # what ``origin`` says of a pinned flag: "env" for SHADOW_FLAGS

    def state(self, tool: str) -> FlagState:
        """The pinned flag of ``tool``, else ``'*'``'s, else the fallback's."""
        found = self.states.get(tool) or self.states.get(KILL_SWITCH)
        if found is not None:
            return found
        return self.fallback.state(tool) if self.fallback is not None else LEGACY

    def pending(self, tool: str) -> bool:
        """Whether ``tool``'s flag is not known yet (not pinned here, and the fallback has not loaded)."""
        if tool in self.states or KILL_SWITCH in self.states:
            return False
        return self.fallback is not None and is_pending(self.fallback, tool)

    def wait(self, timeout: float | None = 5.0) -> bool:
        """Block until the fallback's flags are loaded (True at once without one)."""
        return wait_for(self.fallback, timeout) if self.fallback is not None else True

    def origin(self, tool: str) -> str:
        """``source`` for a pinned flag, else where the fallback had it from."""
        if tool in self.states or KILL_SWITCH in self.states or self.fallback is None:
            return self.source
        return origin(self.fallback, tool)

    def logs_any(self) -> bool:
        """Whether a pin or the fallback puts any tool in shadow or cutover."""
        if any(s.mode is not Mode.LEGACY for s in self.states.values()):
            return True
        if KILL_SWITCH in self.states:
            return False  # every other tool pinned legacy
        return self.fallback is not None and logs_any(self.fallback)


class DbFlags:
    """Flags in the database (tables ``flags`` and ``flag_audit``), cached per process for ``ttl`` seconds.

    Loading and refreshing happen in a background thread, so a tool call never waits on the database once the
    flags are known. At start-up the last-known file (``_last_known``: what the last successful read, by any process
    of this flag database, found) is read first, in the calling thread; without one (or one older than
    ``last_known_max_age``), the first calls wait for the first read (``shadow._adapter``, at most
    ``flag_start_wait``). When the database becomes unreadable, the last flags read stay in force for
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
        if sqlite_path(self.url) is None:
            db.preload(self.url)  # here, not in the refresh thread: a fork mid-import would hang the child

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
            if self._states is not None:  # a read finished first
                return
            self._killed = found.killed
            self._read_ok_at = time.monotonic()
            self._origin = "last_known"
            self._written = (found.states, found.killed, self._read_ok_at - max(0.0, time.time() - found.written_at))
            self._states = found.states

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
            now = time.monotonic()
            stale = now - self._read_ok_at > self.stale_after
            if not self._stale_reported:
                log.warning("flags_unreadable", url=db.safe_url(self.url), error_type=type(exc).__name__,
                            serving="legacy" if stale or self._states is None else "the last flags read",
                            legacy_after_s=self.stale_after)
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
        """Write the last-known file when the flags changed, or to renew its date (never raises)."""
        written = self._written
        now = time.monotonic()
        renew = max(60.0, settings().flags_last_known_max_age / 10)
        if written is not None and written[0] == states and written[1] == killed and now - written[2] < renew:
            return
        try:
            path = self._last_known_path()
            if path is not None:
                last_known.write(path, last_known.url_key(self.url), states, killed)
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
        return (*_rows_to_states(read_sqlite(path)), True)

    def _read(self) -> tuple[dict[str, FlagState], bool]:
        from sqlalchemy import select

        from shadow.calllog import _tables as tables

        with self._engine().connect() as conn:
            rows = conn.execute(select(tables.flags.c.tool, tables.flags.c.mode, tables.flags.c.percent)).all()
        return _rows_to_states([tuple(row) for row in rows])

    def invalidate(self) -> None:
        """Re-read the flags now, in this thread (after a change; an admin path, never the hot path)."""
        self._load()

    # -- writing (CLI and admin code)

    def states(self) -> tuple[dict[str, FlagState], bool]:
        """Every stored flag, and whether the kill switch is on (read now, not cached; nothing is created)."""
        return self._read() if self._exists() else ({}, False)

    def set(
        self, tool: str, mode: Mode | str, percent: int = 100, *, actor: str | None = None,
        reason: str | None = None,
    ) -> AuditEntry | None:
        """Change a tool's flag and write the audit row, in one transaction; None when it already had that flag
        (nothing is written)."""
        if not tool or tool == KILL_SWITCH or len(tool) > 200:
            raise ValueError("the tool name must be 1 to 200 characters and not '*' (use kill/unkill for that)")
        new = FlagState(parse_mode(mode), check_percent(percent) if parse_mode(mode) is Mode.CUTOVER else 100)
        return self._write(tool, new.mode.value, new.percent, actor, reason)

    def kill(self, *, actor: str | None = None, reason: str | None = None) -> AuditEntry | None:
        """Send every tool back to legacy at once (None when the kill switch was on already)."""
        return self._write(KILL_SWITCH, "killed", 100, actor, reason)

    def unkill(self, *, actor: str | None = None, reason: str | None = None) -> AuditEntry | None:
        """Lift the kill switch: every tool returns to its own flag (None when it was not on)."""
        return self._write(KILL_SWITCH, "live", 100, actor, reason, unset_is="live")

    def _write(self, tool: str, mode: str, percent: int, actor: str | None, reason: str | None,
               unset_is: str | None = None) -> AuditEntry | None:
        from sqlalchemy import select

        from shadow.calllog import _tables as tables

        who = actor or default_actor()
        now = clock.now()
        flags, audit = tables.flags, tables.flag_audit
        with self._engine().begin() as conn:
            old = conn.execute(
                select(flags.c.mode, flags.c.percent).where(flags.c.tool == tool).with_for_update()
            ).first()
            if (tuple(old) if old is not None else (unset_is, 100)) == (mode, percent):
                return None  # no change: no audit row
            values = {"mode": mode, "percent": percent, "updated_at": now, "updated_by": who}
            if old is None:
                conn.execute(flags.insert().values(tool=tool, **values))
            else:
                conn.execute(flags.update().where(flags.c.tool == tool).values(**values))
            entry = AuditEntry(new_id(), tool, old[0] if old else None, old[1] if old else None, mode, percent,
                               who, reason, now)
            conn.execute(audit.insert().values(
                id=entry.id, tool=tool, old_mode=entry.old_mode, old_percent=entry.old_percent, new_mode=mode,
                new_percent=percent, actor=who, reason=reason, ts=now,
            ))
        log.info("flag_flipped", tool=tool, old_mode=entry.old_mode, new_mode=mode, percent=percent, actor=who,
                 reason=reason)
        self.invalidate()
        return entry

    def history(self, tool: str | None = None, limit: int | None = None) -> list[AuditEntry]:
        """Audit entries, oldest first (``tool`` narrows; ``'*'`` is the kill switch)."""
        from sqlalchemy import select

        from shadow.calllog import _tables as tables

        if not self._exists():
            return []
        audit = tables.flag_audit
        query = select(audit).order_by(audit.c.ts, audit.c.id)
        if tool is not None:
            query = query.where(audit.c.tool == tool)
        with self._engine().connect() as conn:
            rows = conn.execute(query).mappings().all()
        entries = [
            AuditEntry(r["id"], r["tool"], r["old_mode"], r["old_percent"], r["new_mode"], r["new_percent"],
                       r["actor"], r["reason"], clock.utc(r["ts"]))
            for r in rows
        ]
        return entries[-limit:] if limit else entries


def _rows_to_states(rows: list[tuple[Any, ...]]) -> tuple[dict[str, FlagState], bool]:
    states: dict[str, FlagState] = {}
    killed = False
    for tool, mode, percent in rows:
        if tool == KILL_SWITCH:
            killed = mode == "killed"
            continue
        try:
            states[tool] = FlagState(Mode(mode), int(percent))
        except ValueError:
            log.warning("flag_row_invalid", tool=tool, mode=mode, percent=percent)
    return states, killed


def default_actor() -> str:
    """Who is changing a flag, when not said: the OS user and host."""
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except Exception:
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


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
