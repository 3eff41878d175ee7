"""Time-ordered unique ids (UUIDv7, RFC 9562) for call records, marks and audit rows."""

from __future__ import annotations

import os
import threading
import time
import uuid
from typing import Final

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
    return uuid.UUID(int=_uuid7_int())


def _uuid7_int() -> int:
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
        counter = _counter
        if not _pool:  # 62 random bits per id, drawn _POOL ids at a time (one system call per _POOL ids)
            data = os.urandom(8 * _POOL)
            _pool.extend(int.from_bytes(data[i:i + 8], "big") & _MASK62 for i in range(0, len(data), 8))
        rand = _pool.pop()
    return (now & _MASK48) << 80 | counter << 64 | _VERSION_AND_VARIANT | rand


def new_id() -> str:
    """A UUIDv7 as its canonical 36-character string."""
    h = _uuid7_int().to_bytes(16, "big").hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
