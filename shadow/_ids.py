"""Time-ordered unique ids (UUIDv7, RFC 9562) for call records, marks and audit rows."""

from __future__ import annotations

import os
import threading
import time
import uuid

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def _after_fork_in_child() -> None:
    """The parent's threads may have held the locks at ``fork``: the child starts with free ones."""
    global _lock, _pool_lock
    _lock = threading.Lock()
    _pool_lock = threading.Lock()


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
    return (now & ((1 << 48) - 1)) << 80 | 0x7 << 76 | counter << 64 | 0b10 << 62 | _rand62()


def _rand62() -> int:
    """62 random bits: ``os.urandom`` drawn 32 ids at a time (one system call per 32 ids)."""
    global _pool, _pool_pid
    with _pool_lock:
        if not _pool or _pool_pid != os.getpid():
            _pool_pid = os.getpid()
            data = os.urandom(8 * 32)
            _pool = [int.from_bytes(data[i:i + 8], "big") & ((1 << 62) - 1) for i in range(0, len(data), 8)]
        return _pool.pop()


_pool: list[int] = []
_pool_pid = 0
_pool_lock = threading.Lock()


def new_id() -> str:
    """A UUIDv7 as its canonical 36-character string."""
    h = f"{_uuid7_int():032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
