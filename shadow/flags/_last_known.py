"""The last-known flags file: written after each successful flag read, read at start-up before the database answers.

Like Unleash's backup file and LaunchDarkly's persistent store: a new process serves the flags the last read (by any
process using the same flag database) found, in microseconds, when that read is at most a flag TTL old (the trust a
running process gives its cached flags); an older file is the fallback of a first read that fails or does not finish
within the start wait, so a database down at start is survived and a change made elsewhere is never hidden. The
file holds no secret (a hash of the database URL, the modes and percentages); it is written atomically (a temporary
file in the same directory, then ``os.replace``) with permissions 0600, and one that others may write is never read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from shadow._config import sqlite_path
from shadow.flags._model import FlagState, Mode

FORMAT: Final = 1
_OFF: Final = frozenset({"off", "none", "no", "false", "0"})


@dataclass(frozen=True, slots=True)
class LastKnown:
    """Flags read from the file: the states, the kill switch, and when a database read last confirmed them."""

    states: dict[str, FlagState]
    killed: bool
    written_at: float  # seconds since 1970: when a database read last confirmed them (written, or renewed)


def url_key(url: str) -> str:
    """The key a file is written under: a hash of the (normalised) flag database URL, never the URL itself."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]


def path_for(url: str, setting: str | None) -> Path | None:
    """Where the last-known file of ``url`` lives: the setting (``"off"``: nowhere), else the default place.

    The default: beside a SQLite call log (``shadow.db`` -> ``shadow.flags.json``), else
    ``$XDG_CACHE_HOME/shadow/flags-<hash of the URL>.json`` (``~/.cache`` without ``XDG_CACHE_HOME``).
    """
    if setting is not None and setting.strip():
        return None if setting.strip().lower() in _OFF else Path(setting).expanduser()
    sqlite = sqlite_path(url)
    if sqlite is not None:
        return sqlite.with_name(sqlite.stem + ".flags.json")
    if url.startswith("sqlite"):
        return None  # an in-memory database: nothing outlives the process
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "shadow" / f"flags-{url_key(url)[:16]}.json"


def read(path: Path, key: str, max_age: float) -> tuple[LastKnown | None, str]:
    """The flags in ``path`` for the database ``key`` names, or None and why not (missing, too old, writable by
    others, damaged, another database's). Raises nothing: a file that cannot be used is simply not used."""
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            renewed = info.st_mtime
            if os.name == "posix" and (info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
                                       or info.st_uid not in (os.getuid(), 0)):
                return None, "writable by others"
            data = json.loads(handle.read(1 << 20))
    except FileNotFoundError:
        return None, "missing"
    except (OSError, ValueError) as exc:
        return None, f"unreadable ({type(exc).__name__})"
    try:
        if data["format"] != FORMAT or data["url"] != key:
            return None, "another flag database"
        written_at = max(float(data["written_at"]), renewed)  # ``confirm`` renews the date without a rewrite
        states = {str(tool): FlagState(Mode(mode), int(percent)) for tool, (mode, percent) in data["flags"].items()}
        killed = data["killed"] is True
    except (KeyError, TypeError, ValueError):
        return None, "damaged"
    if time.time() - written_at > max_age:
        return None, "too old"
    return LastKnown(states, killed, written_at), ""


def write(path: Path, key: str, states: dict[str, FlagState], killed: bool) -> None:
    """Write the flags atomically with permissions 0600 (raises ``OSError`` when it cannot)."""
    body = json.dumps({
        "format": FORMAT, "url": key, "written_at": time.time(), "killed": killed,
        "flags": {tool: [state.mode.value, state.percent] for tool, state in sorted(states.items())},
    }, separators=(",", ":")).encode("utf-8")
    if not path.parent.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # created 0600 and exclusively, as ``tempfile.mkstemp`` would (that module is no part of ``import shadow``)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def confirm(path: Path, key: str, states: dict[str, FlagState], killed: bool) -> None:
    """Record that a read found these flags now: renew the file's date when it holds them, else write them (raises
    ``OSError`` when it cannot)."""
    found, _why = read(path, key, float("inf"))
    if found is not None and found.states == states and found.killed == killed:
        os.utime(path)
        return
    write(path, key, states, killed)
