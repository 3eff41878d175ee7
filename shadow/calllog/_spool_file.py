"""One spool file held for replay: its records in batches, where its replay stopped, and its removal once stored."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import orjson

from shadow._logs import get_logger
from shadow.calllog._records import Record
from shadow.calllog._spool_lines import decode

log = get_logger("shadow.writer")

#: The longest spool line replayed: a record is capped far below (``max_payload_bytes``); a longer line is damage.
MAX_LINE: Final = 16 * 1024 * 1024


class SpoolFile:
    """A spool file this process holds locked, to replay; ``finish`` removes it, ``release`` leaves it for later."""

    def __init__(self, path: Path, fd: int, size: int, *, orphan: bool = False) -> None:
        self.path = path
        self.fd = fd
        self.size = size
        self.orphan = orphan  # a dead process's file, not this one's records
        self.damaged = 0  # lines that could not be read (a write cut short by a crash)
        self._read_to = 0  # where the last batch handed out ends in the file

    def batches(self, size: int) -> Iterator[list[Record]]:
        """The file's records in lists of at most ``size``; damaged lines are counted and kept apart.

        A damaged line (cut short by a crash, edited, of the wrong types) is copied to ``<file>.bad`` beside the
        spool, with the reason, and skipped; it never stops the replay of the lines after it.
        """
        batch: list[Record] = []
        with self.path.open("rb") as fh:
            fh.readline(MAX_LINE)  # the header
            resume = self._stored_to()
            if fh.tell() < resume <= self.size:  # a writer before this one stored the lines up to there
                fh.seek(resume)
            while line := fh.readline(MAX_LINE + 1):  # never a whole damaged file as one line in memory
                if len(line) > MAX_LINE:
                    self._bad(line[:4096], f"a line over {MAX_LINE} bytes (its first 4096 kept)")
                    while (rest := fh.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                        pass  # the rest of that line, read past in bounded pieces
                    continue
                if not line.endswith(b"\n"):
                    self._bad(line, "a last line cut short")
                    break
                try:
                    batch.append(decode(line))
                except Exception as exc:  # any damage, including RecursionError and bad types
                    self._bad(line, f"{type(exc).__name__}: {str(exc)[:200]}")
                    continue
                if len(batch) >= size:
                    self._read_to = fh.tell()
                    yield batch
                    batch = []
            self._read_to = fh.tell()
        if batch:
            yield batch

    @property
    def progress_path(self) -> Path:
        """Where the offset up to which this file's lines are stored is kept: a process that exits (or dies)
        halfway through a replay leaves it, and the next one goes on from there instead of from the start."""
        return self.path.with_name(self.path.name + ".at")

    def _stored_to(self) -> int:
        try:
            return int(self.progress_path.read_text(encoding="ascii").strip() or 0)
        except (OSError, ValueError):
            return 0

    def stored_batch(self) -> None:
        """The batch last handed out is stored: keep its end as the point to go on from."""
        temp = self.progress_path.with_name(self.progress_path.name + f".{os.getpid()}")
        try:
            temp.write_text(str(self._read_to), encoding="ascii")
            os.replace(temp, self.progress_path)
        except OSError as exc:  # replay goes on; a later writer may store some lines again (no duplicates)
            log.warning("spool.progress_not_kept", spool=str(self.path), error=str(exc)[:200])

    @property
    def bad_path(self) -> Path:
        """Where this file's damaged lines are kept."""
        return self.path.with_name(self.path.name + ".bad")

    def _bad(self, line: bytes, reason: str) -> None:
        self.damaged += 1
        try:
            with self.bad_path.open("ab") as fh:
                fh.write(orjson.dumps({"reason": reason, "line": line.decode("utf-8", "replace")[:1_000_000]}))
                fh.write(b"\n")
        except OSError as exc:
            log.error("spool.bad_line_not_kept", spool=str(self.path), error=str(exc)[:200])

    def finish(self) -> None:
        """Remove the file (every record in it is stored) and drop the lock."""
        try:
            if os.fstat(self.fd).st_nlink > 0 and os.stat(self.path).st_ino == os.fstat(self.fd).st_ino:
                os.unlink(self.path)
                self.progress_path.unlink(missing_ok=True)
        except FileNotFoundError:
            pass
        finally:
            self.release()

    def release(self) -> None:
        """Drop the lock and keep the file: a later writer replays it."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


__all__ = ["MAX_LINE", "SpoolFile"]
