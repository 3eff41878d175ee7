"""The local spool: an append-only JSON-lines file per process for records the database could not take.

Files are named ``<prefix>.<pid>.spool`` (the process's active file) and ``<prefix>.<pid>-<n>.spool`` (files set
aside for replay). A file is always created locked (``flock``, under a temporary name, then renamed into place), and
its owner keeps the lock while it lives, so a file whose lock can be taken belongs to a dead process: an orphan,
which any later writer of the same store claims (under the lock, so two live processes never replay one file) and
replays. Replays are safe to repeat: inserts are idempotent by record id.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import threading
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Final

import orjson

from shadow._logs import get_logger
from shadow.calllog._records import Built
from shadow.calllog._spool_file import SpoolFile
from shadow.calllog._spool_lines import encode

fcntl: ModuleType | None
try:  # POSIX: a spool file is locked by the process writing or replaying it
    import fcntl
except ImportError:  # Windows: no advisory locks; a spool is only replayed by the process that wrote it
    fcntl = None


log = get_logger("shadow.writer")

_FORMAT: Final = 1
_PID_NAME = re.compile(r"^(?P<prefix>.+)\.(?P<pid>\d+)\.spool$")


def _header(tag: str) -> bytes:
    return (json.dumps({"shadow_spool": _FORMAT, "tag": tag}, separators=(",", ":")) + "\n").encode()


def _read_tag(path: Path) -> str | None:
    """The store tag in a spool file's header, or None when the file has no readable header."""
    try:
        with path.open("rb") as fh:
            first = fh.readline(4096)  # a header is short; a file that is not a spool is not read whole
        head = json.loads(first)
    except (OSError, ValueError):
        return None
    if not isinstance(head, dict) or head.get("shadow_spool") != _FORMAT:
        return None
    tag = head.get("tag")
    return tag if isinstance(tag, str) else None


def _try_lock(fd: int) -> bool:
    if fcntl is None:
        return False  # without locks another process's spool is never claimed (it may still be writing it)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class Spool:
    """The spool of one process for one store: append batches, set them aside for replay, claim orphans.

    ``path`` is this process's file (``Settings.spool_file()``); files beside it that share its prefix are the
    spools of other processes. ``tag`` names the store, so files of another store in the same directory are left
    alone. ``max_bytes`` caps what this process keeps on disk (its active file and those it set aside).

    When ``path``'s directory cannot be written (read-only, not a directory), the spool goes to ``fallback`` (a
    directory; ``default_fallback()``: the user's cache directory) under a prefix naming the first directory, and
    says so in the log; orphans are looked for in both places.
    """

    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int, tag: str = "",
                 fallback: str | os.PathLike[str] | None = None) -> None:
        given = Path(path)
        match = _PID_NAME.match(given.name)
        prefix = match.group("prefix") if match else given.name.removesuffix(".spool")
        self.directory = given.parent
        self.prefix = prefix
        self.places = [(self.directory, prefix)]  # where this store's spools are: the directory, then the fallback
        if fallback is not None:
            where = hashlib.sha256(str(given.parent.absolute()).encode()).hexdigest()[:12]
            self.places.append((Path(fallback), f"{prefix}-{where}"))
        self.max_bytes = max_bytes
        self.tag = tag
        self._pid = os.getpid()
        self._fd = -1
        self._size = 0  # bytes in the active file
        self._aside = 0  # bytes in files set aside and not yet finished
        self._active = self.path
        self._held: list[SpoolFile] = []
        self._lock = threading.RLock()  # appends come from the writer thread and, on overflow, from callers
        self._dirty = False

    @property
    def path(self) -> Path:
        """This process's spool file (``<prefix>.<pid>.spool``)."""
        return self.directory / f"{self.prefix}.{os.getpid()}.spool"

    @property
    def active_path(self) -> Path:
        """The file this spool appends to: ``path``, or a variant if another spool of this process holds it."""
        return self._active

    @property
    def pending_bytes(self) -> int:
        """Bytes this process has spooled and not yet replayed."""
        return self._size + self._aside

    @property
    def active_bytes(self) -> int:
        """Bytes in the active file (set-aside files are counted by whoever replays them)."""
        return self._size

    def has_active(self) -> bool:
        """Whether the active file holds records."""
        return self._fd >= 0 and self._size > len(_header(self.tag))

    def _open(self) -> None:
        try:
            self._open_in()
        except OSError as exc:
            if len(self.places) < 2 or self.directory == self.places[1][0]:
                raise
            first = self.directory
            self.directory, self.prefix = self.places[1]
            log.warning("spool.fallback", spool=str(first), fallback=str(self.directory),
                        error_type=type(exc).__name__, error=str(exc)[:200],
                        hint="make the spool's directory writable, or set SHADOW_SPOOL")
            self._open_in()

    def _open_in(self) -> None:
        # the cache directory is made as needed; beside a call log, one missing directory at most (a database URL
        # into a directory that does not exist is the fallback's case, never a tree of directories made there)
        fallback = len(self.places) > 1 and self.directory == self.places[1][0]
        self.directory.mkdir(parents=fallback, exist_ok=True)
        temp = self.directory / f".{self.prefix}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            header = _header(self.tag)
            os.write(fd, header)
            os.fsync(fd)
            final = self._free_name()
            os.rename(temp, final)
        except BaseException:
            os.close(fd)
            temp.unlink(missing_ok=True)
            raise
        self._fd = fd
        self._active = final
        self._size = len(header)

    def _free_name(self) -> Path:
        """The active file's name: ``path``, unless another spool of this process has it already."""
        final = self.path
        if not final.exists():
            return final
        try:
            fd = os.open(final, os.O_RDONLY)
        except FileNotFoundError:
            return final
        try:
            if _try_lock(fd):
                # Left by an earlier process that had this pid: keep its records as an orphan, under another name.
                os.rename(final, self._aside_name())
                return final
        finally:
            os.close(fd)
        return self._aside_name()  # held by another spool object of this process

    def _aside_name(self) -> Path:
        return self.directory / f"{self.prefix}.{os.getpid()}-{secrets.token_hex(4)}.spool"

    def append(self, records: Sequence[Built], *, sync: bool = True) -> bool:
        """Append ``records`` (and fsync unless ``sync`` is false); False (nothing written) past ``max_bytes``.

        Raises ``OSError`` when the file cannot be written; a partial write is cut off again.
        """
        data = b"".join(encode(r) for r in records)
        with self._lock:
            header = 0 if self._fd >= 0 else len(_header(self.tag))
            if self.pending_bytes + header + len(data) > self.max_bytes:
                return False
            if self._fd < 0:
                self._open()
            try:
                view = memoryview(data)
                while view:
                    written = os.write(self._fd, view)
                    view = view[written:]
                if sync:
                    os.fsync(self._fd)
            except OSError:
                os.ftruncate(self._fd, self._size)
                raise
            self._size += len(data)
            self._dirty = not sync
            return True

    def sync(self) -> None:
        """fsync what was appended without it (overflow from callers)."""
        with self._lock:
            if self._dirty and self._fd >= 0:
                os.fsync(self._fd)
            self._dirty = False

    def reject(self, record: Built, reason: str) -> Path:
        """Keep a record the store can never accept apart, with the reason (``<prefix>.rejected.jsonl``)."""
        path = self.directory / f"{self.prefix}.rejected.jsonl"
        line = orjson.dumps({"reason": reason[:500], "record": orjson.loads(encode(record))})
        with self._lock:
            self.directory.mkdir(parents=True, exist_ok=True)
            with path.open("ab") as fh:
                fh.write(line + b"\n")
        return path

    def set_aside(self) -> SpoolFile | None:
        """Move the active file's records into a file of their own, to replay; new spills start a new file."""
        with self._lock:
            self.sync()
            return self._set_aside()

    def _set_aside(self) -> SpoolFile | None:
        if not self.has_active():
            return None
        target = self._aside_name()
        try:
            os.rename(self._active, target)
        except OSError:
            target = self._active  # replay it under its own name; the next spill opens a new file
            log.warning("spool.rename_failed", spool=str(target))
        held = SpoolFile(target, self._fd, self._size)
        self._aside += self._size
        self._held.append(held)
        self._fd = -1
        self._size = 0
        return held

    def done(self, held: SpoolFile, *, replayed: bool) -> None:
        """``held`` is replayed (remove it) or given up for now (leave it, unlocked, for a later writer)."""
        if held in self._held:
            self._held.remove(held)
            self._aside -= held.size
        if replayed:
            held.finish()
        else:
            held.release()

    def claim_orphans(self) -> list[SpoolFile]:
        """Lock and return the spool files of dead processes of this store (none that a live process holds)."""
        found: list[SpoolFile] = []
        mine = {self._active} | {h.path for h in self._held}
        candidates: list[Path] = []
        for directory, prefix in self.places:
            try:
                candidates += sorted(directory.glob(f"{glob_escape(prefix)}.*.spool"))
            except OSError:
                continue
        for path in candidates:
            if path in mine:
                continue
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                if not _try_lock(fd):
                    os.close(fd)  # a live process holds it
                    continue
                st = os.fstat(fd)
                if st.st_nlink == 0 or os.stat(path).st_ino != st.st_ino or _read_tag(path) != self.tag:
                    os.close(fd)  # removed meanwhile, replaced, or another store's
                    continue
            except OSError:
                os.close(fd)
                continue
            found.append(SpoolFile(path, fd, st.st_size, orphan=True))
        return found

    def close(self) -> None:
        """Remove the active file when it holds no records and drop every lock; what remains waits for replay."""
        with self._lock:
            self.sync()
            self._close()

    def _close(self) -> None:
        if self._fd >= 0:
            if not self.has_active():
                self._active.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = -1
            self._size = 0
        for held in self._held:
            held.release()
        self._held.clear()
        self._aside = 0

    def forget_in_child(self) -> None:
        """After ``fork``: close this process's copies of the parent's descriptors without touching its files."""
        for fd in [self._fd, *(h.fd for h in self._held)]:
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = -1
        self._size = 0
        self._held.clear()
        self._aside = 0


def default_fallback() -> Path:
    """Where a spool goes when its own directory cannot be written: ``$XDG_CACHE_HOME/shadow/spool`` (default
    ``~/.cache/shadow/spool``)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "shadow" / "spool"


def glob_escape(text: str) -> str:
    """``text`` with glob metacharacters escaped."""
    return re.sub(r"([*?\[])", r"[\1]", text)
