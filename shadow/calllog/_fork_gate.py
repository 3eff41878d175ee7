"""The fork gate every SQLite use goes through: no thread of the parent inside SQLite when the process forks."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from typing import Any, Final


class ForkGate:
    """Keeps SQLite out of ``fork``: no thread of the parent is inside SQLite, and no connection crosses it.

    SQLite keeps the lock state of each database file in library memory, per process, and a child inherits it. A
    child forked while a thread of the parent was connecting (``PRAGMA journal_mode=WAL`` locks a new file), in a
    transaction or closing a connection (a checkpoint) inherits locks that nothing in the child will release: its
    own writes wait out the busy timeout. And a child whose parent had a connection open, even idle, shares that
    connection's bookkeeping: its own connections then take no file locks of their own, so another process may
    checkpoint and reset the WAL under them (lost commits, a malformed database). So ``fork`` waits (at most
    ``FORK_WAIT`` seconds) until no thread is inside a SQLite pool (getting, using or returning a connection) or a
    direct read, keeps them out until it is done, and closes the idle pooled connections first: the child starts
    with no SQLite state of shadow's, and the parent reconnects on its next write.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()  # re-entrant: ``before_fork`` closes connections while holding it
        self.busy = 0
        self.pools: weakref.WeakSet[Any] = weakref.WeakSet()

    def enter(self) -> None:
        with self.cond:
            self.busy += 1

    def leave(self) -> None:
        with self.cond:
            self.busy = max(0, self.busy - 1)
            if not self.busy:
                self.cond.notify_all()

    def add(self, gated: Any) -> None:
        with self.cond:
            self.pools.add(gated)

    def before_fork(self) -> None:
        self.cond.acquire()
        deadline = time.monotonic() + FORK_WAIT
        while self.busy and (left := deadline - time.monotonic()) > 0:
            self.cond.wait(left)
        if self.busy:
            return  # a connection is still in use (a write past FORK_WAIT): fork anyway rather than hang
        for idle in list(self.pools):
            with contextlib.suppress(Exception):
                idle.dispose()

    def after_fork_in_parent(self) -> None:
        self.cond.release()

    def after_fork_in_child(self) -> None:
        self.cond = threading.Condition()
        self.busy = 0
        self.pools = weakref.WeakSet()


FORK_WAIT: Final = 5.0
gate: Final = ForkGate()
os.register_at_fork(before=gate.before_fork, after_in_parent=gate.after_fork_in_parent,
                    after_in_child=gate.after_fork_in_child)
