"""Imports deferred until first use: subpackage fronts' names (PEP 562), and heavy modules loaded off the caller's path.

``lazy_names`` serves the fronts of subpackages whose modules need an extra. ``load`` serves the core:
``import shadow`` loads no SQLAlchemy, Alembic, database driver or jsonschema: the background threads that need them
(the call-log writer, the flag refresh) import them through ``load``. A thread that is importing a module holds
that module's import lock; a child forked meanwhile inherits the lock held by a thread that does not exist there,
and its own first import of the module hangs. So ``load`` imports under a lock that ``fork`` takes first
(``os.register_at_fork``): a fork waits (at most ``FORK_WAIT`` seconds) for an import in progress to end, and the
child starts with the module whole or not there at all. ``guarded`` runs a first use that imports as it goes
(``importlib.metadata.version`` imports ``email.parser``) under the same lock.

The fork hooks are registered by the first ``load``, not on import: ``fork`` runs the ``before`` hooks in the
reverse order of their registration, and this one must run before those of ``logging`` and of the SQLite fork gate,
which take locks that an import may need (Alembic's modules call ``logging.getLogger``).
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Mapping
from typing import Final, TypeVar

_T = TypeVar("_T")


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package`` that imports each name from the module ``where`` gives for it."""

    def __getattr__(name: str) -> object:
        try:
            module = where[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        return getattr(importlib.import_module(module), name)

    return __getattr__


#: Seconds a ``fork`` waits for a background import to end before it forks anyway.
FORK_WAIT: Final = 10.0

_guard = threading.RLock()  # re-entrant: a module imported under it may ``load`` another
_held_for_fork = False
_loaded: set[str] = set()
_registered = False
_register_lock = threading.Lock()


def load(*names: str) -> None:
    """Import the modules ``names``, in order, under the fork guard (nothing to do once each is loaded)."""
    if _loaded.issuperset(names):
        return
    _register()
    with _guard:
        for name in names:
            if name not in _loaded:
                importlib.import_module(name)
                _loaded.add(name)


def guarded(work: Callable[[], _T]) -> _T:
    """``work()`` under the fork guard: for a first use that imports as it goes (``importlib.metadata.version``
    imports ``email.parser``), from a thread that is not the caller's. Cache what it gives: each call takes the
    guard."""
    _register()
    with _guard:
        return work()


def _register() -> None:
    global _registered
    if not _registered:
        with _register_lock:
            if not _registered:
                os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                                    after_in_child=_after_fork_in_child)
                _registered = True


def _before_fork() -> None:
    global _held_for_fork
    _held_for_fork = _guard.acquire(timeout=FORK_WAIT)


def _after_fork_in_parent() -> None:
    global _held_for_fork
    if _held_for_fork:
        _held_for_fork = False
        _guard.release()


def _after_fork_in_child() -> None:
    global _guard, _held_for_fork, _register_lock
    _guard = threading.RLock()
    _register_lock = threading.Lock()
    _held_for_fork = False
