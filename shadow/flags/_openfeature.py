"""Flags from an existing flag service: a ``FlagSource`` backed by an OpenFeature client (any provider)."""

from __future__ import annotations

import atexit
import datetime as dt
import os
import queue
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Engine, select
from sqlalchemy.dialects import postgresql, sqlite

from shadow import _sessions as sessions
from shadow._ids import new_id
from shadow._logs import get_logger
from shadow.calllog import _db as db
from shadow.calllog import _tables as tables
from shadow.flags._db import KILL_SWITCH, LEGACY, FlagState, Mode, default_actor, parse_mode

try:
    from openfeature import api
    from openfeature.client import OpenFeatureClient
    from openfeature.evaluation_context import EvaluationContext
except ImportError as missing:  # pragma: no cover - depends on the environment
    raise ImportError(f"shadow.flags_openfeature needs the OpenFeature SDK ({missing}); install it with: "
                      "pip install 'shadow-errors[openfeature]'") from missing

log = get_logger("shadow.flags_openfeature")

DEFAULT_PREFIX: Final = "shadow"


@dataclass(frozen=True, slots=True)
class _Entry:
    state: FlagState
    at: float


class OpenFeatureFlags:
    """Each tool's mode and cutover percentage from OpenFeature flags, with the session as the targeting key.

    Flags (``prefix`` defaults to ``shadow``): ``shadow.<tool>.mode`` (string: legacy, shadow or cutover; missing
    means legacy), ``shadow.<tool>.percent`` (integer 0 to 100, used in cutover; missing means 100) and
    ``shadow.kill`` (boolean: every tool legacy). Evaluations are cached per (tool, session) for ``ttl`` seconds;
    a stale entry is served while a background thread re-evaluates it. Each change of a tool's state observed
    here is written to the flag audit log (and mirrored into the ``flags`` table) by that background thread,
    never on the call path; several processes observing the same flip write one audit row.
    """

    def __init__(
        self, client: OpenFeatureClient | None = None, *, prefix: str = DEFAULT_PREFIX, ttl: float = 5.0,
        audit_url: str | None = None, audit: bool = True, actor: str | None = None, max_entries: int = 100_000,
    ) -> None:
        if ttl < 0:
            raise ValueError(f"ttl must be a non-negative number of seconds, not {ttl!r}")
        self.client = client or api.get_client()
        self.prefix = prefix.rstrip(".")
        self.ttl = ttl
        self.audit = audit
        self._audit_url = audit_url
        self._actor = actor
        self._max = max_entries
        self._cache: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._observed: dict[str, FlagState] = {}
        self._killed: bool | None = None
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[str, Any, Any]] = queue.SimpleQueue()
        self._pending: set[tuple[str, str]] = set()
        self._busy = 0
        self._idle = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._warned: set[tuple[str, str]] = set()
        self._at_exit = False
        _instances.add(self)

    def _forget_in_child(self) -> None:
        """After ``fork`` in the child: a lock no thread of the parent holds, and none of its background work (its
        thread does not exist here; the parent carries out what it had queued)."""
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._jobs = queue.SimpleQueue()
        self._pending = set()
        self._busy = 0
        self._thread = None

    # -- the hot path

    def state(self, tool: str) -> FlagState:
        """The flag of ``tool`` for the current session (``shadow._sessions.current()``), from memory when cached."""
        sid = sessions.current()
        key = (tool, sid)
        entry = self._cache.get(key)
        now = time.monotonic()
        if entry is not None:
            if now - entry.at > self.ttl:
                self._refresh_soon(key)
            return entry.state
        found = self._evaluate(tool, sid)
        self._remember(key, found, now)
        return found

    def _remember(self, key: tuple[str, str], found: FlagState, now: float) -> None:
        with self._lock:
            self._cache[key] = _Entry(found, now)
            self._cache.move_to_end(key)
            while len(self._cache) > self._max:
                self._cache.popitem(last=False)

    def _refresh_soon(self, key: tuple[str, str]) -> None:
        with self._lock:
            if key in self._pending:
                return
            self._pending.add(key)
        self._enqueue("refresh", key, None)

    def flag_names(self, tool: str) -> tuple[str, str]:
        """The mode and percent flag keys of ``tool``."""
        return f"{self.prefix}.{tool}.mode", f"{self.prefix}.{tool}.percent"

    def _evaluate(self, tool: str, sid: str) -> FlagState:
        context = EvaluationContext(targeting_key=sid, attributes={"tool": tool})
        try:
            killed = self.client.get_boolean_value(f"{self.prefix}.kill", False, context)
            mode_key, percent_key = self.flag_names(tool)
            raw_mode = self.client.get_string_value(mode_key, Mode.LEGACY.value, context)
            raw_percent = self.client.get_integer_value(percent_key, 100, context)
        except Exception as exc:  # a provider must not break the call
            self._warn_once(tool, "openfeature_evaluation_failed", error_type=type(exc).__name__)
            return LEGACY
        self._observe_kill(bool(killed))
        if killed:
            return LEGACY
        try:
            mode = parse_mode(raw_mode)
            found = FlagState(mode, raw_percent if mode is Mode.CUTOVER else 100)
        except (TypeError, ValueError) as exc:
            self._warn_once(tool, "openfeature_flag_invalid", mode=str(raw_mode)[:50], percent=str(raw_percent)[:20],
                            problem=str(exc)[:200])
            return LEGACY
        self._observe(tool, found)
        return found

    def _warn_once(self, tool: str, event: str, **fields: object) -> None:
        if (tool, event) not in self._warned:
            self._warned.add((tool, event))
            log.warning(event, tool=tool, **fields)

    def _observe(self, tool: str, found: FlagState) -> None:
        old = self._observed.get(tool)
        if old == found:
            return
        self._observed[tool] = found
        if self.audit:
            self._enqueue("audit", tool, (old, found))

    def _observe_kill(self, killed: bool) -> None:
        if self._killed is killed:
            return
        old, self._killed = self._killed, killed
        if self.audit and (old is not None or killed):
            self._enqueue("kill", KILL_SWITCH, killed)

    # -- the background thread

    def _enqueue(self, kind: str, subject: Any, detail: Any) -> None:
        with self._lock:
            self._busy += 1
            if not self._at_exit:
                atexit.register(self.flush, 5.0)  # audit rows still queued at exit are written, not lost
                self._at_exit = True
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="shadow-openfeature", daemon=True)
                self._thread.start()
        self._jobs.put((kind, subject, detail))

    def _work(self) -> None:
        while True:
            try:
                kind, subject, detail = self._jobs.get(timeout=30.0)
            except queue.Empty:
                with self._lock:
                    if self._busy == 0:
                        self._thread = None
                        return
                continue
            try:
                if kind == "refresh":
                    tool, sid = subject
                    with self._lock:
                        self._pending.discard(subject)
                    self._remember(subject, self._evaluate(tool, sid), time.monotonic())
                elif kind == "audit":
                    self._record(subject, detail[1].mode.value, detail[1].percent)
                elif kind == "kill":
                    self._record(KILL_SWITCH, "killed" if detail else "live", 100)
            except Exception as exc:
                log.warning("openfeature_background_failed", job=kind, error_type=type(exc).__name__,
                            error=str(exc)[:200])
            finally:
                with self._idle:
                    self._busy -= 1
                    if self._busy == 0:
                        self._idle.notify_all()

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until the audit writes and refreshes queued so far are done; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy == 0, timeout=timeout)

    def _engine(self) -> tuple[Engine, str]:
        from shadow._config import settings
        from shadow.calllog import _migrate as migrate

        url = db.normalise_url(self._audit_url or settings().db_url)
        migrate.ensure(url)
        return db.engine(url), url

    def _record(self, tool: str, mode: str, percent: int) -> None:
        """Mirror the observed state into ``flags`` and write an audit row, unless it is recorded already."""
        engine, url = self._engine()
        flags, audit = tables.flags, tables.flag_audit
        who = self._actor or f"openfeature:{default_actor()}"
        now = dt.datetime.now(dt.UTC)
        with engine.begin() as conn:
            old = conn.execute(select(flags.c.mode, flags.c.percent).where(flags.c.tool == tool)).first()
            if old is not None and (old[0], old[1]) == (mode, percent):
                return  # another process recorded this flip already
            if old is None and mode in (Mode.LEGACY.value, "live"):
                return  # an unset flag is legacy already: nothing flipped
            values = {"mode": mode, "percent": percent, "updated_at": now, "updated_by": who}
            if old is None:
                insert = sqlite.insert if url.startswith("sqlite") else postgresql.insert
                statement: Any = insert(flags).values(tool=tool, **values).on_conflict_do_nothing(
                    index_elements=["tool"])
            else:
                statement = flags.update().where(
                    (flags.c.tool == tool) & (flags.c.mode == old[0]) & (flags.c.percent == old[1])
                ).values(**values)
            if conn.execute(statement.returning(flags.c.tool)).first() is None:
                return  # a concurrent writer got there first (rowcount is not reliable for this on psycopg)
            conn.execute(audit.insert().values(
                id=new_id(), tool=tool, old_mode=old[0] if old else None, old_percent=old[1] if old else None,
                new_mode=mode, new_percent=percent, actor=who,
                reason=f"observed via OpenFeature ({self._provider_name()})", ts=now,
            ))
        log.info("flag_flipped", tool=tool, new_mode=mode, percent=percent, actor=who, source="openfeature")

    def _provider_name(self) -> str:
        try:
            return str(self.client.provider.get_metadata().name)[:100]
        except Exception:
            return "unknown provider"


_instances: weakref.WeakSet[OpenFeatureFlags] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for flags in list(_instances):
        flags._forget_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
