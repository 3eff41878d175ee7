"""Transcript files read within bounds: JSON lines a line at a time, one JSON document whole up to a size."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from shadow.transcripts._formats import FormatError, Parsed, Problem, documents, line_document

#: The most one file read whole may hold (``shadow import --max-file-mb``): one JSON document (it cannot be read
#: in parts), an OTel export (one conversation's spans may be anywhere in it) and a pipe or device (copied first).
MAX_FILE_BYTES: Final = 256 * 1024 * 1024
#: The most one line of a JSON lines file may hold (``shadow import --max-line-mb``); the file itself has no bound.
MAX_LINE_BYTES: Final = 64 * 1024 * 1024
_CHUNK: Final = 1024 * 1024
_BOM: Final = b"\xef\xbb\xbf"

#: Conversations from JSON documents already read: ``(where, document)`` or the ``Problem`` of one that was not.
Reader = Callable[[Iterable[tuple[str, object] | Problem], str], Parsed]


@dataclass(frozen=True, slots=True)
class Source:
    """One input file as the first pass saw it: where to read it again, its digest and time, and its layout."""

    name: str  # as given on the command line: in messages and positions
    path: Path  # what the second pass opens: the file itself, or the copy of a pipe or device
    digest: str  # sha256 of its bytes (sessions without an id are named from it)
    mtime: dt.datetime
    size: int  # the bytes the first pass checked; the second reads no further
    lines: bool  # JSON lines, read a line at a time; else one document (or a few), read whole


def _shown(limit: int) -> str:
    return f"{limit / (1024 * 1024):g} MiB" if limit >= 1024 * 1024 else f"{limit} bytes"


def _too_big(name: str, limit: int) -> FormatError:
    return FormatError(f"{name} holds more than {_shown(limit)}, the most shadow import reads from one file; split it "
                       "(for example: split -l 100000 FILE part-) or raise --max-file-mb")


def _too_long(name: str, number: int, limit: int) -> FormatError:
    return FormatError(f"{name}:line {number} is longer than {_shown(limit)}, the most shadow import reads as one "
                       "line of a JSON lines file; check that the file is JSON lines, or raise --max-line-mb")


@contextlib.contextmanager
def _opened(path: Path, name: str) -> Iterator[IO[bytes]]:
    """``path`` open for reading; a missing, unreadable or directory path is a ``FormatError`` naming ``name``."""
    try:
        with path.open("rb") as handle:
            yield handle
    except FileNotFoundError:
        raise FormatError(f"{name}: no such file; check the path") from None
    except IsADirectoryError:
        raise FormatError(f"{name} is a directory; pass transcript files, for example {name}/*.jsonl") from None
    except OSError as exc:
        raise FormatError(f"{name} cannot be read ({exc.strerror or type(exc).__name__})") from None


def _copy(handle: IO[bytes], name: str, limit: int, copies: contextlib.ExitStack) -> Path:
    """A pipe or device copied to a temporary file (removed with ``copies``), refused past ``limit`` bytes."""
    copy = copies.enter_context(tempfile.NamedTemporaryFile(prefix="shadow-import-", suffix=".part"))  # noqa: SIM115
    copied = 0
    while chunk := handle.read(min(_CHUNK, limit + 1 - copied)):
        copied += len(chunk)
        if copied > limit:
            raise _too_big(name, limit)
        copy.write(chunk)
    copy.flush()
    return Path(copy.name)


def _alone(line: bytes) -> bool:
    """Whether one line is a JSON value on its own."""
    try:
        json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return True


def _line(raw: bytes, number: int, name: str, limit: int) -> str:
    """One line's text, without its line end; a ``FormatError`` when it is too long or not UTF-8."""
    content = raw[:-1] if raw.endswith(b"\n") else raw
    content = content[:-1] if content.endswith(b"\r") else content
    if number == 1 and content.startswith(_BOM):
        content = content[len(_BOM):]
    if len(content) > limit:
        raise _too_long(name, number, limit)
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{name}:line {number} is not UTF-8 text (byte {exc.start} of the line); export the "
                          "transcripts as UTF-8 JSON") from None


def _whole(handle: IO[bytes], name: str, size: int) -> str:
    """The first ``size`` bytes of a file as text."""
    raw = handle.read(size)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{name} is not UTF-8 text (byte {exc.start}); export the transcripts as JSON") from None


def scan(path: str | Path, *, max_file_bytes: int, max_line_bytes: int, held: bool,
         copies: contextlib.ExitStack) -> Source:
    """The first pass over one file: its layout, digest and bounds checked, nothing kept (``held``: the second
    pass will hold the whole file, so the file bound applies to JSON lines too); ``FormatError`` when it cannot be
    imported. JSON lines are recognised by their first line that is not blank: a JSON value on its own, with more
    lines after it."""
    name, where = str(path), Path(path)
    with _opened(where, name) as handle:
        info = os.fstat(handle.fileno())
        mtime = dt.datetime.fromtimestamp(info.st_mtime, dt.UTC)
        if stat.S_ISREG(info.st_mode):
            return _scan(handle, name, where, mtime, info.st_size, max_file_bytes, max_line_bytes, held)
        target = _copy(handle, name, max_file_bytes, copies)
    with _opened(target, name) as handle:
        return _scan(handle, name, target, mtime, target.stat().st_size, max_file_bytes, max_line_bytes, held)


def _scan(handle: IO[bytes], name: str, target: Path, mtime: dt.datetime, known: int, max_file_bytes: int,
          max_line_bytes: int, held: bool) -> Source:
    digest = hashlib.sha256()
    read = number = 0
    first = b""
    while not first.strip():  # the blank lines before the first line that is not
        if read > max_file_bytes:
            raise _too_big(name, max_file_bytes)
        raw = handle.readline(max_file_bytes + 1 - read)
        if not raw:
            break
        number, read = number + 1, read + len(raw)
        digest.update(raw)
        first = raw[len(_BOM):] if number == 1 and raw.startswith(_BOM) else raw
    if read > max_file_bytes:
        raise _too_big(name, max_file_bytes)
    lines = len(first.rstrip(b"\r\n")) <= max_line_bytes and _alone(first)
    if lines:
        more = 0
        while raw := handle.readline(max_line_bytes + 2):
            number, read = number + 1, read + len(raw)
            digest.update(raw)
            more += bool(_line(raw, number, name, max_line_bytes).strip())
            if held and read > max_file_bytes:
                raise _too_big(name, max_file_bytes)
        lines = more > 0  # a single line is one document, read as before
    if not lines:
        if max(read, known) > max_file_bytes:
            raise _too_big(name, max_file_bytes)
        while chunk := handle.read(min(_CHUNK, max_file_bytes + 1 - read)):
            read += len(chunk)
            digest.update(chunk)
            if read > max_file_bytes:
                raise _too_big(name, max_file_bytes)
        handle.seek(0)
        for _ in documents(_whole(handle, name, read), name):  # raises when it is not JSON at all
            pass
    return Source(name, target, digest.hexdigest(), mtime, read, lines)


def pieces(source: Source, parse: Reader, *, held: bool, max_line_bytes: int) -> Iterator[tuple[Parsed, int]]:
    """The second pass: ``(what a part of the file holds, the bytes read so far)``, one part per line of a JSON
    lines file (the whole file at once when ``held``, or when it is one document)."""
    with _opened(source.path, source.name) as handle:
        if not source.lines:
            yield parse(documents(_whole(handle, source.name, source.size), source.name), source.name), source.size
            return
        numbered = _numbered(handle, source, max_line_bytes)
        if held:
            yield parse((line_document(n, text, source.name) for n, text, _ in numbered), source.name), source.size
            return
        for number, text, offset in numbered:
            yield parse([line_document(number, text, source.name)], source.name), offset


def _numbered(handle: IO[bytes], source: Source, limit: int) -> Iterator[tuple[int, str, int]]:
    """``(number, text, bytes read)`` of each line that is not blank, up to the size the first pass checked."""
    read = number = 0
    while read < source.size and (raw := handle.readline(min(limit + 2, source.size - read))):
        number, read = number + 1, read + len(raw)
        text = _line(raw, number, source.name, limit)
        if text.strip():
            yield number, text, read
