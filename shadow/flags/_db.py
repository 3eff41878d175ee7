"""Feature flags per tool: mode, cutover percentage, kill switch; stored with an audit log, cached with a TTL."""

from __future__ import annotations

import math
import os
import threading
import time
import weakref
from collections.abc import Mapping

from sqlalchemy import Engine, select

from shadow import _clock as clock
from shadow._config import sqlite_path
from shadow._ids import new_id
from shadow._logs import get_logger
from shadow.calllog import _db as db
from shadow.calllog import _tables as tables
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
from shadow.typing import FlagSource

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
    "bucket",
    "check_percent",
    "current",
    "default_actor",
    "is_pending",
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

    def __init__(self, states: Mapping[str, FlagState], fallback: FlagSource | None = None) -> None:
        self.states = dict(states)
        self.fallback = fallback

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


class DbFlags:
    """Flags in the database (tables ``flags`` and ``flag_audit``), cached per process for ``ttl`` seconds.

    Loading and refreshing happen in a background thread, so a tool call never waits on the database: until the
    first load has finished (``wait`` blocks for it, for example at start-up) every tool is served legacy. When the
    database becomes unreadable, the last flags read stay in force for ``stale_after`` seconds (default: 60, or 10
    TTLs if longer), so a database blip does not flip tools; after that every tool is served legacy, as the kill
    switch would, until a read succeeds again. Changes made through this object apply at once here.
    """

    def __init__(self, url: str, *, ttl: float = 5.0, stale_after: float | None = None) -> None:
        self.url = db.normalise_url(url)
        self.ttl = ttl if math.isfinite(ttl) and ttl >= 0 else 5.0  # a NaN or infinite TTL would never refresh
        bound = max(60.0, 10 * self.ttl) if stale_after is None else stale_after
        self.stale_after = bound if math.isfinite(bound) and bound >= 0 else 60.0
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
        db.preload(self.url)  # here, not in the refresh thread: a fork mid-import would hang the child

    # -- reading (hot path)

    def state(self, tool: str) -> FlagState:
        """The cached flag of ``tool``; triggers a background refresh when older than the TTL."""
        states = self._states
        if states is None:
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
        """Whether the first load has not finished yet (``state`` answers legacy meanwhile)."""
        return self._states is None

    def prefetch(self) -> None:
        """Start loading in the background now (before the first tool call needs the flags)."""
        if self._states is None and not self._refreshing:
            self._refresh_soon()

    def wait(self, timeout: float | None = 5.0) -> bool:
        """Block until the first load has finished (successfully or not); False on timeout."""
        self.prefetch()
        return self._loaded.wait(timeout)

    def _refresh_soon(self) -> None:
        with self._lock:
            if self._refreshing:
                return
            self._refreshing = True
        threading.Thread(target=self._load, name="shadow-flags-refresh", daemon=True).start()

    def _load(self) -> None:
        try:
            states, killed = self.states()
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
            self._stale_reported = False
            if old is not None and old != states:
                log.info("flags_changed", changed=sorted(k for k in states.keys() | old.keys()
                                                         if states.get(k) != old.get(k)))
        finally:
            self._refreshing = False
            self._loaded.set()

    def _exists(self) -> bool:
        """False while the SQLite file is not there: reading flags never creates it (until then: all legacy)."""
        path = sqlite_path(self.url)
        return path is None or path.exists()

    def _engine(self) -> Engine:
        if not self._ready:
            from shadow.calllog import _migrate as migrate

            migrate.ensure(self.url)
            self._ready = True
        return db.engine(self.url)

    def _read(self) -> tuple[dict[str, FlagState], bool]:
        with self._engine().connect() as conn:
            rows = conn.execute(select(tables.flags.c.tool, tables.flags.c.mode, tables.flags.c.percent)).all()
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
    ) -> AuditEntry:
        """Change a tool's flag and write the audit row, in one transaction."""
        if not tool or tool == KILL_SWITCH or len(tool) > 200:
            raise ValueError("the tool name must be 1 to 200 characters and not '*' (use kill/unkill for that)")
        new = FlagState(parse_mode(mode), check_percent(percent) if parse_mode(mode) is Mode.CUTOVER else 100)
        return self._write(tool, new.mode.value, new.percent, actor, reason)

    def kill(self, *, actor: str | None = None, reason: str | None = None) -> AuditEntry:
        """Send every tool back to legacy at once."""
        return self._write(KILL_SWITCH, "killed", 100, actor, reason)

    def unkill(self, *, actor: str | None = None, reason: str | None = None) -> AuditEntry:
        """Lift the kill switch: every tool returns to its own flag."""
        return self._write(KILL_SWITCH, "live", 100, actor, reason)

    def _write(self, tool: str, mode: str, percent: int, actor: str | None, reason: str | None) -> AuditEntry:
        who = actor or default_actor()
        now = clock.now()
        flags, audit = tables.flags, tables.flag_audit
        with self._engine().begin() as conn:
            old = conn.execute(
                select(flags.c.mode, flags.c.percent).where(flags.c.tool == tool).with_for_update()
            ).first()
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
                stored = DbFlags(current_settings.db_url, ttl=current_settings.flag_ttl)
                stored.prefetch()
                source = stored
            pinned = os.environ.get(ENV_VAR)
            if pinned:
                states, problems = parse_env_lenient(pinned)
                for problem in problems:
                    example = "'search=shadow,book=cutover:25'"
                    report_once(Problem(ENV_VAR, pinned, f"is not valid ({problem})", example))
                source = StaticFlags(states, fallback=source)
            _source = source
        return _source


_instances: weakref.WeakSet[DbFlags] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """The parent's locks may be held and its refresh thread does not exist here: start both afresh."""
    global _lock
    _lock = threading.Lock()
    for flags in list(_instances):
        flags._lock = threading.Lock()
        flags._refreshing = False
        flags._loaded = threading.Event()  # its own lock may be held too; set again when the flags were loaded
        if flags._states is not None:
            flags._loaded.set()


os.register_at_fork(after_in_child=_after_fork_in_child)


def wait(timeout: float | None = 5.0) -> bool:
    """Block until the process-wide flags are loaded (at start-up, when the first calls must follow them)."""
    return wait_for(current(), timeout)


def is_pending(source: FlagSource, tool: str) -> bool:
    """Whether ``source`` does not know ``tool``'s flag yet (a source without ``pending`` always knows)."""
    pending = getattr(source, "pending", None)
    return bool(pending(tool)) if callable(pending) else False


def wait_for(source: FlagSource, timeout: float | None = 5.0) -> bool:
    """Block until ``source`` has loaded its flags, if it loads them at all (``wait``); False on timeout."""
    waiter = getattr(source, "wait", None)
    return bool(waiter(timeout)) if callable(waiter) else True


def use(source: FlagSource | None) -> None:
    """Replace the process-wide flag source (``None``: rebuild it from settings on next use)."""
    global _source
    with _lock:
        _source = source
