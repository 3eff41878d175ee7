"""What shadow swallows when a user's object raises while a record is built (``__str__``, ``items()``, ...).

Any exception a tool's own values raise costs that part of the record, never the writer. The one exception is the
process's own exit on the main thread: a ``KeyboardInterrupt`` there may be the user's Ctrl-C (signals are
delivered to the main thread only) and a ``SystemExit`` a ``sys.exit()``; both propagate. On any other thread (the
writer's) neither can come from outside: the interpreter's shutdown does not raise in daemon threads, and Ctrl-C
never reaches them; so there they came from the user's object, and are swallowed like any other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_main = threading.main_thread


def swallowed(exc: BaseException) -> bool:
    """Whether shadow carries on after ``exc`` raised by user code while building a record."""
    if isinstance(exc, Exception):
        return True
    return not (isinstance(exc, KeyboardInterrupt | SystemExit) and threading.current_thread() is _main())


#: Items one walk over a value (conversion, the search for echoed secrets) visits at most: past it the walk stops
#: and says so (``_truncated``). A mapping whose ``__iter__`` never ends costs that part of the record, bounded in
#: CPU, instead of the writer. Far above what a stored record keeps (``max_payload_bytes``).
WALK_BUDGET = 20_000

_lock = threading.Lock()
_counts: dict[str, int] = {}


def note(reason: str) -> None:
    """Count one record part this process built without the user's value, by ``reason`` (``walk_budget``, ...)."""
    with _lock:
        _counts[reason] = _counts.get(reason, 0) + 1


def counts() -> dict[str, int]:
    """What ``note`` counted so far in this process."""
    with _lock:
        return dict(_counts)


def guarded(build: Callable[[], Any], fallback: Any) -> Any:
    """One part of a record; a part that cannot be built becomes ``fallback`` so the record still lands."""
    for _attempt in range(3):  # a value mutated by its caller mid-conversion may raise RuntimeError once
        try:
            return build()
        except RuntimeError:
            continue
        except BaseException as exc:  # any exception of the tool's values, but the main thread's exit
            if not swallowed(exc):
                raise
            from shadow._config import report_internal_error  # here, not per part: an import statement costs ~1 us
            from shadow._logs import get_logger

            note("record_part_failed")
            get_logger("shadow.adapter").warning("record_part_failed", error_type=type(exc).__name__)
            report_internal_error("record.part", exc)
            return fallback
    return fallback
