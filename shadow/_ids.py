"""Time-ordered unique ids (UUIDv7, RFC 9562) for call records, marks and audit rows."""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import uuid

_MASK48: Final = (1 << 48) - 1
_MASK62: Final = (1 << 62) - 1
_VERSION_AND_VARIANT: Final = 0x7 << 76 | 0b10 << 62
_POOL: Final = 64  # random draws per os.urandom call

_lock = threading.Lock()
_last_ms = 0
_counter = 0
_pool: list[int] = []


def _after_fork_in_child() -> None:
    """The parent's threads may have held the lock at ``fork``; and the child must not reuse the parent's random
    bits (its ids would repeat the parent's): it starts with a free lock and an empty pool."""
    global _lock
    _lock = threading.Lock()
    _pool.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def uuid7() -> uuid.UUID:
    """A UUIDv7: 48-bit Unix milliseconds, then a 12-bit counter and random bits; monotonic per process."""
    import uuid  # here: ``new_id`` makes the same text without it, and ``import shadow`` needs no uuid (platform)

    now, counter, rand = _next()
    return uuid.UUID(int=(now & _MASK48) << 80 | counter << 64 | _VERSION_AND_VARIANT | rand)


def _next() -> tuple[int, int, int]:
    """The next id's milliseconds, counter and 62 random bits."""
    global _last_ms, _counter
    with _lock:
        now = time.time_ns() // 1_000_000
        if now <= _last_ms:
            _counter += 1
            if _counter > 0xFFF:
                _last_ms += 1
                _counter = 0
            now = _last_ms
        else:
            _counter = int.from_bytes(os.urandom(2), "big") & 0x7FF
        _last_ms = now
        if not _pool:  # 62 random bits per id, drawn _POOL ids at a time (one system call per _POOL ids)
            data = os.urandom(8 * _POOL)
            _pool.extend(int.from_bytes(data[i:i + 8], "big") & _MASK62 for i in range(0, len(data), 8))
        return now, _counter, _pool.pop()


def random_hex() -> str:
    """``uuid.uuid4().hex`` without the ``uuid`` module: 32 hex digits, 122 of their bits random."""
    value = int.from_bytes(os.urandom(16), "big") & ~(0xF000 << 64 | 0xC000 << 48) | 0x4000 << 64 | 0x8000 << 48
    return f"{value:032x}"


_prefix: tuple[int, str] = (-1, "")  # the text of the last millisecond seen: "xxxxxxxx-xxxx-7"


def new_id() -> str:
    """A UUIDv7 as its canonical 36-character string (``str(uuid7())``, without the ``UUID`` object)."""
    global _prefix
    now, counter, rand = _next()
    ms, prefix = _prefix
    if ms != now:
        h = f"{now & _MASK48:012x}"
        prefix = f"{h[:8]}-{h[8:]}-7"
        _prefix = (now, prefix)
    tail = f"{rand | 1 << 63:016x}"  # the variant bits (0b10) above the random ones
    return f"{prefix}{counter:03x}-{tail[:4]}-{tail[4:]}"
