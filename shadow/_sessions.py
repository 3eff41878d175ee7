"""Agent sessions: which task a call belongs to, its sequence number, and the marks that hand over control."""

from __future__ import annotations

import contextvars
import itertools
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final, Literal

from shadow import _clock as clock
from shadow._fingerprint import safe_name
from shadow._ids import new_id, random_hex
from shadow._logs import get_logger
from shadow._names import check_name
from shadow.calllog._records import MarkRecord
from shadow.integrations._context import framework_session

if TYPE_CHECKING:
    from shadow.flags._model import FlagState

log = get_logger("shadow.sessions")

MARK_KINDS: Final = ("user_turn", "end")
MarkKind = Literal["user_turn", "end"]
_MAX_SESSION_ID: Final = 200
_MAX_COUNTERS: Final = 100_000



def _host_name() -> str:
    """The host's name, as ``socket.gethostname()`` gives it (on POSIX, the kernel's node name: no ``socket`` module
    to import)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


HOST: Final = _host_name()[:255]

_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("shadow_session", default=None)
_counters: OrderedDict[str, tuple[int, itertools.count[int]]] = OrderedDict()
_counters_lock = threading.Lock()
_process_session: tuple[int, str] | None = None


def _check_id(session_id: str) -> str:
    return check_name(session_id, "the session id", "shadow.session('task-42')", _MAX_SESSION_ID)


@contextmanager
def session(session_id: str | None = None) -> Iterator[str]:
    """Group the calls of one agent task: ``with shadow.session("task-42"):``.

    A context variable, so it follows asyncio tasks; in a worker thread, enter ``shadow.session(same_id)`` again
    (calls from all threads of one session share one sequence). Without an id, a fresh one is made.
    """
    sid = _check_id(session_id) if session_id is not None else f"s-{random_hex()}"
    token = _current.set(sid)
    try:
        yield sid
    finally:
        _current.reset(token)


def process_session() -> str:
    """The session of calls made outside any ``shadow.session``: one per process (renewed after fork)."""
    global _process_session
    found = _process_session
    if found is None:
        pid = os.getpid()
        found = _process_session = (pid, f"proc-{HOST}-{pid}-{random_hex()[:8]}")
    return found[1]


def _forget_process_session() -> None:
    """After ``fork`` in the child: a new process session, and locks no thread of the parent can be holding."""
    global _process_session, _counters_lock, _late_lock
    _process_session = None
    _counters_lock = threading.Lock()
    _late_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_process_session)


def current() -> str:
    """The session id calls are logged under right now.

    An open ``shadow.session`` first; else the conversation of the agent framework running the call (an MCP session,
    a LangGraph thread, an Agents SDK trace group or run, a PydanticAI conversation); else the process's session.
    """
    return _current.get() or framework_session() or process_session()


def next_position(session_id: str) -> tuple[int, int]:
    """``(epoch, seq)``: the session's counter epoch and its next sequence number (shared by calls and marks).

    Counters live per process; the least recently used is evicted past ``_MAX_COUNTERS``. A counter started anew (a
    new process, or a session idle through 100,000 others) restarts seq at 1 under a later epoch, and events order
    by (epoch, seq), so a restart never reads as earlier events.
    """
    with _counters_lock:
        found = _counters.get(session_id)
        if found is None:
            found = _counters[session_id] = (_new_epoch(), itertools.count(1))
            if len(_counters) > _MAX_COUNTERS:
                _counters.popitem(last=False)
        else:
            _counters.move_to_end(session_id)
        return found[0], next(found[1])


#: Per tool: the sessions served legacy because the start wait passed before the flags were known (an arm per
#: session: they keep the legacy arm for that tool until its flag changes). Empty in a process that started in time.
LATE: dict[str, OrderedDict[str, None]] = {}
#: Per tool with late sessions: the first flag known after them; a different flag releases them all.
_late_flag: dict[str, FlagState] = {}
_late_lock = threading.Lock()


def pin_late(session_id: str, tool: str) -> None:
    """``session_id`` was served legacy for ``tool`` before the flags were known: it keeps that arm (bounded like
    the counters: past ``_MAX_COUNTERS`` sessions per tool, the oldest is forgotten)."""
    with _late_lock:
        held = LATE.setdefault(tool, OrderedDict())
        held[session_id] = None
        held.move_to_end(session_id)
        if len(held) > _MAX_COUNTERS:
            held.popitem(last=False)


def hold_late(session_id: str, tool: str, state: FlagState) -> bool:
    """Whether ``session_id`` keeps the legacy arm for ``tool`` under ``state``: it was served before the flags were
    known, and ``tool``'s flag is still the first one known after that (a kill, a new percentage release it)."""
    with _late_lock:
        first = _late_flag.setdefault(tool, state)
        if first != state:
            LATE.pop(tool, None)
            _late_flag.pop(tool, None)
            return False
        held = LATE.get(tool)
        return held is not None and session_id in held


def has_position(session_id: str) -> bool:
    """Whether this process has given ``session_id`` a sequence number (logged a call or a mark in it)."""
    return session_id in _counters


def next_seq(session_id: str) -> int:
    """The next sequence number in ``session_id`` (``next_position`` without the epoch)."""
    return next_position(session_id)[1]


_last_epoch = 0


def _new_epoch() -> int:
    """Microseconds since 1970, strictly increasing within the process (called under ``_counters_lock``)."""
    global _last_epoch
    _last_epoch = max(time.time_ns() // 1000, _last_epoch + 1)
    return _last_epoch


def mark(kind: MarkKind, *, source: str = "live") -> None:
    """Record that the agent handed over to a person (``"user_turn"``) or finished (``"end"``)."""
    if kind not in MARK_KINDS:
        raise ValueError(f"mark kind must be one of {', '.join(MARK_KINDS)}, not {kind!r}")
    sid = current()
    if not has_position(sid) and not _may_log():
        return  # nothing of this session is logged and no tool is shadowed: a mark would only create the call log
    epoch, seq = next_position(sid)
    record = MarkRecord(
        id=new_id(),
        session_id=safe_name(sid),
        seq=seq,
        epoch=epoch,
        ts=clock.now(),
        kind=kind,
        process=str(os.getpid()),
        host=HOST,
        source=source,
    )
    from shadow.calllog._writer import get_writer

    try:
        get_writer().submit(record)
    except Exception:
        log.exception("mark_not_logged", kind=kind)
        from shadow._config import settings

        if settings().strict:
            raise


def _may_log() -> bool:
    """Whether the process-wide flags put any tool in shadow or cutover (waiting for them as a first call would)."""
    try:
        from shadow.flags import _db as flagmod

        source = flagmod.current()
        if flagmod.is_pending(source, ""):
            flagmod.await_start(source, "")
        return flagmod.logs_any(source)
    except Exception:
        return True
