"""``shadow import``: agent transcripts into the call log, so a team can measure the loop rate it has today."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from sqlalchemy import select

from shadow import _sessions as sessions
from shadow._fingerprint import safe_name
from shadow._names import check_name
from shadow._redact import JSONValue, to_jsonable
from shadow.calllog import _db as db
from shadow.calllog import _migrate as migrate
from shadow.calllog import _tables as tables
from shadow.calllog._pending import PendingCall, ToolSpec
from shadow.calllog._records import CallRecord, MarkRecord, Record
from shadow.calllog._store import SqlStore
from shadow.contract._guard import Outcome, outcome_of_value
from shadow.contract._payloads import ToolError, ok
from shadow.contract._rules import Rules, looks_like_error
from shadow.contract._schema import is_valid
from shadow.flags._db import Mode, Variant
from shadow.normalize import _http as normalize
from shadow.transcripts._chat import parse_chat
from shadow.transcripts._formats import (
    Call,
    Conversation,
    Format,
    FormatError,
    Mark,
    Parsed,
    Problem,
    text_of,
    unreadable,
)
from shadow.transcripts._otel import parse_otel
from shadow.transcripts._recorded import as_recorded

#: Record ids are uuid5 of (session, sequence, kind) in this namespace: importing a file again adds nothing.
NAMESPACE: Final = uuid.UUID("6f1d3c52-7a0e-5b8e-9a43-2f3d0c9e5a11")
SOURCE: Final = "import"
#: The source of imported records whose time is not in the data (a stand-in: the file's modification time, in
#: order), so the report can say that ``--since``, per-day rows and savings do not say when they happened.
SYNTHETIC_TIME_SOURCE: Final = "import-synthetic-time"
BATCH: Final = 500
#: The most one transcript file may hold (``shadow import --max-file-mb``): a bigger file, or an endless one such
#: as ``/dev/zero``, is refused once that much is read, never read whole into memory.
MAX_FILE_BYTES: Final = 256 * 1024 * 1024
_CHUNK: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ImportOptions:
    """How to read transcripts: the format, the arm the model was in, where messages and ids live, the rules."""

    fmt: Format
    variant: Variant = Variant.LEGACY
    messages_key: str | None = None
    id_key: str | None = None
    rules: Rules | None = None
    result_key: str | None = None
    max_file_bytes: int = MAX_FILE_BYTES

    def effective_rules(self) -> Rules:
        """Your rules first, then the MCP error texts, then the built-in rules (the adapter's)."""
        own = self.rules.without_defaults() if self.rules is not None else Rules.empty()
        return own + normalize.mcp() + Rules.default()


@dataclass(slots=True)
class Summary:
    """What an import saw and wrote."""

    files: int = 0
    conversations: int = 0
    calls: int = 0
    errors: int = 0
    user_turns: int = 0
    ends: int = 0
    unrecorded_arguments: int = 0
    synthetic_times: int = 0  # calls whose time is not in the data (the file's time, in order, stands in)
    written: int = 0
    already_present: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        """Malformed records skipped."""
        return len(self.problems)

    def to_json(self) -> dict[str, Any]:
        """The summary as JSON data (the shape of ``shadow import --format json``)."""
        return {
            "files": self.files, "conversations": self.conversations, "calls": self.calls, "errors": self.errors,
            "user_turns": self.user_turns, "ends": self.ends, "skipped": self.skipped,
            "unrecorded_arguments": self.unrecorded_arguments, "synthetic_times": self.synthetic_times,
            "written": self.written,
            "already_present": self.already_present,
            "problems": [{"where": p.where, "message": p.message} for p in self.problems],
        }


@dataclass(frozen=True, slots=True)
class ReadFile:
    """One transcript file, parsed: its conversations, the records it could not read, its digest and time."""

    path: Path
    digest: str
    mtime: dt.datetime
    parsed: Parsed


def read_file(path: str | Path, options: ImportOptions) -> ReadFile:
    """Parse one file; ``FormatError`` when the whole file is unreadable in ``options.fmt``."""
    where = Path(path)
    try:
        raw = _read_bounded(where, options.max_file_bytes)
    except FileNotFoundError:
        raise FormatError(f"{where}: no such file; check the path") from None
    except IsADirectoryError:
        raise FormatError(f"{where} is a directory; pass transcript files, for example {where}/*.jsonl") from None
    except OSError as exc:
        raise FormatError(f"{where} cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{where} is not UTF-8 text (byte {exc.start}); export the transcripts as JSON") from None
    name = str(where)
    if options.fmt == "otel":
        parsed = parse_otel(text, name)
    else:
        parsed = parse_chat(options.fmt, text, name, messages_key=options.messages_key, id_key=options.id_key,
                            result_key=options.result_key)
    mtime = dt.datetime.fromtimestamp(where.stat().st_mtime, dt.UTC)
    return ReadFile(where, hashlib.sha256(raw).hexdigest(), mtime, parsed)


def _read_bounded(where: Path, limit: int) -> bytes:
    """The file's bytes, read in chunks; ``FormatError`` as soon as more than ``limit`` bytes are there."""
    shown = f"{limit / (1024 * 1024):g} MiB" if limit >= 1024 * 1024 else f"{limit} bytes"
    too_big = FormatError(f"{where} holds more than {shown}, the most shadow import reads from one file; split it "
                          "(for example: split -l 100000 FILE part-) or raise --max-file-mb")
    with where.open("rb") as source:
        size = os.fstat(source.fileno()).st_size
        if size > limit:
            raise too_big
        chunks: list[bytes] = []
        kept = 0
        while chunk := source.read(min(_CHUNK, limit + 1 - kept)):
            chunks.append(chunk)
            kept += len(chunk)
            if kept > limit:
                raise too_big
    return b"".join(chunks)


def record_id(session_id: str, seq: int, kind: str) -> str:
    """The deterministic id of an imported record."""
    return str(uuid.uuid5(NAMESPACE, f"{session_id}\n{seq}\n{kind}"))


def result_value(call: Call) -> object:
    """What the result rules read for a call's result (see ``normalize.tool_text_value``)."""
    result = call.result
    if isinstance(result, Mapping) and "type" not in result:
        if call.is_error and not looks_like_error(result):
            return {"ok": False, "error": text_of([result]) or "error"}
        return dict(result)
    text = text_of(result) if not isinstance(result, str) else result
    if text is None:
        if call.is_error:
            return {"ok": False, "error": "error"}
        return to_jsonable(result, redact=False)
    return normalize.tool_text_value(text, is_error=call.is_error)


def served_outcome(call: Call) -> Outcome | None:
    """The outcome of a result that already is a contract payload (the structured arm), else None."""
    text = call.result if isinstance(call.result, str) else text_of(call.result)
    if text is None:
        return None
    payload = normalize.tool_text_value(text)
    if not isinstance(payload, Mapping) or not is_valid(payload):
        return None
    if payload["ok"]:
        return Outcome(ok(payload["data"]))
    body = payload["error"]
    try:
        error = ToolError(body["code"], body["message"], body["retryable"], body["next_action"], body["context"])
    except (TypeError, ValueError):
        return None
    return Outcome(error.payload(), error, "served")


def outcome_of(call: Call, options: ImportOptions, rules: Rules) -> Outcome:
    """A call's outcome: a served contract payload as it is, else the explicit flag, else the result rules."""
    if options.variant is Variant.STRUCTURED:
        served = served_outcome(call)
        if served is not None:
            return served
    value = result_value(call)
    if call.is_error is False:
        return Outcome(ok(value))
    outcome = outcome_of_value(value, rules=rules, tool=call.tool)
    if call.is_error and outcome.error is None:
        return Outcome(ToolError.of("internal_error").payload(), ToolError.of("internal_error"), None, True)
    return outcome


def _legacy(call: Call) -> JSONValue:
    content = to_jsonable(call.result)
    if call.is_error is None:
        return content
    return {"content": content, "is_error": call.is_error}


def session_of(conversation: Conversation, read: ReadFile, index: int) -> str:
    """The session id: the conversation's own id, else one derived from the file's content and position."""
    return conversation.conversation_id or f"import-{read.digest[:16]}-{index}"


def records(read: ReadFile, options: ImportOptions, summary: Summary, rules: Rules | None = None) -> Iterator[Record]:
    """The call and mark records of one parsed file (counted into ``summary``)."""
    rules = rules or options.effective_rules()
    mode = Mode.CUTOVER if options.variant is Variant.STRUCTURED else Mode.SHADOW
    for index, conversation in enumerate(read.parsed.conversations):
        summary.conversations += 1
        sid = session_of(conversation, read, index)
        counts = Summary()
        try:
            found = list(_conversation_records(conversation, sid, read, options, counts, rules, mode))
        except (ValueError, RecursionError) as exc:  # one bad record: skipped with its place and reason
            summary.problems.append(Problem(conversation.where, f"{unreadable(exc)}; the conversation is skipped"))
            continue
        for name in ("calls", "errors", "user_turns", "ends", "unrecorded_arguments", "synthetic_times"):
            setattr(summary, name, getattr(summary, name) + getattr(counts, name))
        yield from found


def _conversation_records(conversation: Conversation, sid: str, read: ReadFile, options: ImportOptions,
                          summary: Summary, rules: Rules, mode: Mode) -> Iterator[Record]:
    """One conversation's records; ``ValueError`` when one of its names cannot be stored."""
    check_name(sid, "the conversation id", "a string of at most 200 characters")
    base = conversation.ts or read.mtime
    for seq, event in enumerate(conversation.events, 1):
        ts = event.ts or base + dt.timedelta(microseconds=seq)
        source = SYNTHETIC_TIME_SOURCE if event.ts is None and conversation.ts is None else SOURCE
        if isinstance(event, Mark):
            summary.user_turns += event.kind == "user_turn"
            summary.ends += event.kind == "end"
            yield MarkRecord(record_id(sid, seq, "mark"), safe_name(sid), seq, ts, event.kind, SOURCE, sessions.HOST,
                             source)
            continue
        check_name(event.tool, "the tool name", "a string of at most 200 characters")
        call_options = options if event.variant is None else dataclasses.replace(
            options, variant=Variant(event.variant))
        outcome = outcome_of(event, call_options, rules)
        spec = ToolSpec(event.tool, rules, True, None, SOURCE)
        started = int(ts.timestamp() * 1_000_000) * 1000
        call_mode = Mode.CUTOVER if call_options.variant is Variant.STRUCTURED else mode
        pending = PendingCall(spec=spec, mode=call_mode, variant=call_options.variant, session_id=sid, seq=seq,
                              started_ns=started, latency_ns=event.latency_us * 1000, args=(),
                              kwargs=event.arguments, value=_legacy(event), outcome=outcome)
        record = pending.build()
        if event.recorded is not None:  # a span shadow exported: its own fields, not derived again
            record = as_recorded(record, event.recorded)
        summary.calls += 1
        summary.errors += record.outcome == "error"
        summary.unrecorded_arguments += not event.arguments_recorded and event.recorded is None  # else: fingerprinted
        summary.synthetic_times += source == SYNTHETIC_TIME_SOURCE
        yield dataclasses.replace(record, id=record_id(sid, seq, "call"), ts=ts, process=SOURCE, source=source)


def _present(url: str, batch: Sequence[Record], problems: list[Problem] | None = None) -> int:
    """How many records of ``batch`` are stored already; a stored call that differs (the same conversation id and
    position, other tool or arguments) is reported in ``problems``: the new copy is not stored."""
    found = 0
    with db.engine(url).connect() as conn:
        for table, kind in ((tables.calls, CallRecord), (tables.marks, MarkRecord)):
            mine = {r.id: r for r in batch if isinstance(r, kind)}
            if not mine:
                continue
            rows = conn.execute(select(table.c.id, table.c.session_id, *(
                (table.c.tool, table.c.args) if kind is CallRecord else ())).where(table.c.id.in_(list(mine)))).all()
            found += len(rows)
            for row in rows if kind is CallRecord else ():
                new = mine[row[0]]
                assert isinstance(new, CallRecord)
                if problems is not None and (row[2], row[3]) != (new.tool, new.args):
                    problems.append(Problem(f"conversation {row[1]!r}", "was imported before with different content; "
                                            "this copy is not stored (give conversations distinct ids, --id-key)"))
    return found


def read_files(paths: Iterable[str | Path], options: ImportOptions) -> list[ReadFile]:
    """Parse every file; a whole file that cannot be read raises ``FormatError``, and ids that name several
    conversations of this import raise ``IdCollision`` (nothing is written then)."""
    reads = [read_file(path, options) for path in paths]
    check_ids(reads, options)
    return reads


class IdCollision(FormatError):
    """One conversation id names several conversations of one import: they would merge into one session."""


def check_ids(reads: Sequence[ReadFile], options: ImportOptions) -> None:
    """Refuse an import in which one conversation id names two or more conversations, saying how to fix it."""
    if options.fmt == "otel" or not options.id_key:  # spans of one conversation may span export files; without
        return  # --id-key a reused id with other content is reported per conversation when written
    seen: dict[str, list[str]] = {}
    for read in reads:
        for conversation in read.parsed.conversations:
            if conversation.conversation_id is not None:
                seen.setdefault(conversation.conversation_id, []).append(conversation.where)
    repeated = {cid: where for cid, where in seen.items() if len(where) > 1}
    if not repeated:
        return
    cid, where = next(iter(repeated.items()))
    key = f"--id-key {options.id_key}"
    places = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
    raise IdCollision(
        f"{key} does not tell conversations apart: {len(repeated)} ids name several conversations each, for "
        f"example {cid!r} names {len(where)} ({places}); they would merge into one session. Pass a key that is "
        "unique per conversation, or a combined key such as --id-key task_id,trial"
    )


def write(
    reads: Sequence[ReadFile], url: str, options: ImportOptions, *, dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Summary:
    """Write the records of parsed files to the call log at ``url``; ``progress(1)`` after each conversation."""
    summary = Summary()
    rules = options.effective_rules()
    store = SqlStore(url)
    if not dry_run:
        migrate.ensure(store.url)
    batch: list[Record] = []

    def flush() -> None:
        if batch and not dry_run:
            reported = len(summary.problems)
            summary.already_present += _present(store.url, batch, summary.problems)
            summary.problems[reported:] = list({p.where: p for p in summary.problems[reported:]}.values())
            store.write(batch)
        summary.written += len(batch)
        batch.clear()

    for read in reads:
        summary.files += 1
        summary.problems.extend(read.parsed.problems)
        seen = summary.conversations
        for record in records(read, options, summary, rules):
            batch.append(record)
            if len(batch) >= BATCH:
                flush()
            if progress is not None and summary.conversations > seen:
                progress(summary.conversations - seen)
                seen = summary.conversations
    flush()
    summary.written -= summary.already_present
    return summary


def import_files(
    paths: Iterable[str | Path], url: str, options: ImportOptions, *, dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Summary:
    """Read every file first (a whole file that cannot be read raises ``FormatError`` before anything is
    written), then write their records to the call log at ``url``; importing a file twice adds nothing."""
    return write(read_files(paths, options), url, options, dry_run=dry_run, progress=progress)
