"""``shadow import``: agent transcripts into the call log, so a team can measure the loop rate it has today."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
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
from shadow.transcripts._chat import chat_documents
from shadow.transcripts._formats import Call, Conversation, Format, Mark, Parsed, Problem, text_of, unreadable
from shadow.transcripts._ids import refuse_shared_ids
from shadow.transcripts._otel import otel_documents
from shadow.transcripts._reading import MAX_FILE_BYTES, MAX_LINE_BYTES, Reader, Source, pieces, scan
from shadow.transcripts._recorded import as_recorded

#: Record ids are uuid5 of (session, sequence, kind) in this namespace: importing a file again adds nothing.
NAMESPACE: Final = uuid.UUID("6f1d3c52-7a0e-5b8e-9a43-2f3d0c9e5a11")
SOURCE: Final = "import"
#: The source of imported records whose time is not in the data (a stand-in: the file's modification time, in
#: order), so the report can say that ``--since``, per-day rows and savings do not say when they happened.
SYNTHETIC_TIME_SOURCE: Final = "import-synthetic-time"
BATCH: Final = 500
#: The problems a summary lists; past them it only counts (a file of a million bad lines stays small in memory).
MAX_LISTED: Final = 1000


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
    max_line_bytes: int = MAX_LINE_BYTES

    @property
    def held(self) -> bool:
        """Whether a whole file is held before its conversations are known (OTel: spans are grouped by
        conversation across the file), so the file bound applies to JSON lines too."""
        return self.fmt == "otel"

    def reader(self) -> Reader:
        """What reads conversations from a file's JSON documents in this format."""
        if self.fmt == "otel":
            return otel_documents
        return functools.partial(chat_documents, self.fmt, messages_key=self.messages_key, id_key=self.id_key,
                                 result_key=self.result_key)

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
    problems: list[Problem] = field(default_factory=list)  # the first MAX_LISTED of them
    unlisted: int = 0  # problems past those

    @property
    def skipped(self) -> int:
        """Malformed records skipped."""
        return len(self.problems) + self.unlisted

    def report(self, problems: Iterable[Problem]) -> None:
        """Count ``problems``; the first ``MAX_LISTED`` of an import are kept to be shown."""
        for problem in problems:
            if len(self.problems) < MAX_LISTED:
                self.problems.append(problem)
            else:
                self.unlisted += 1

    def to_json(self) -> dict[str, Any]:
        """The summary as JSON data (the shape of ``shadow import --format json``)."""
        return {
            "files": self.files, "conversations": self.conversations, "calls": self.calls, "errors": self.errors,
            "user_turns": self.user_turns, "ends": self.ends, "skipped": self.skipped,
            "unrecorded_arguments": self.unrecorded_arguments, "synthetic_times": self.synthetic_times,
            "written": self.written,
            "already_present": self.already_present,
            "problems": [{"where": p.where, "message": p.message} for p in self.problems],
            "problems_unlisted": self.unlisted,
        }


@dataclass(frozen=True, slots=True)
class ReadFile:
    """One transcript file, parsed: its conversations, the records it could not read, its digest and time."""

    path: Path
    digest: str
    mtime: dt.datetime
    parsed: Parsed


@contextlib.contextmanager
def scanned(paths: Iterable[str | Path], options: ImportOptions) -> Iterator[list[Source]]:
    """The first pass over every file: each one's layout, digest and bounds checked and, with ``--id-key``, no id
    naming two conversations; a ``FormatError`` then, before anything is written. Copies of pipes live as long as
    the context."""
    with contextlib.ExitStack() as copies:
        sources = [scan(path, max_file_bytes=options.max_file_bytes, max_line_bytes=options.max_line_bytes,
                        held=options.held, copies=copies) for path in paths]
        if options.fmt != "otel" and options.id_key:  # spans of one conversation may span export files; without
            # --id-key a reused id with other content is reported per conversation when written
            refuse_shared_ids(lambda: (c for s in sources for p, _ in parts(s, options) for c in p.conversations),
                              options.id_key)
        yield sources


def parts(source: Source, options: ImportOptions) -> Iterator[tuple[Parsed, int]]:
    """The second pass over one file: what each line (or the whole file) holds, with the bytes read so far."""
    return pieces(source, options.reader(), held=options.held, max_line_bytes=options.max_line_bytes)


def read_file(path: str | Path, options: ImportOptions) -> ReadFile:
    """One file parsed and held whole (for a look at a small file; ``import_files`` streams); ``FormatError`` when
    the whole file cannot be read in ``options.fmt``."""
    with scanned([path], options) as [source]:
        return _held(source, options)


def _held(source: Source, options: ImportOptions) -> ReadFile:
    whole = Parsed()
    for parsed, _ in parts(source, options):
        whole.conversations.extend(parsed.conversations)
        whole.problems.extend(parsed.problems)
    return ReadFile(Path(source.name), source.digest, source.mtime, whole)


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


def records(read: ReadFile, options: ImportOptions, summary: Summary, rules: Rules | None = None, *,
            first: int = 0) -> Iterator[Record]:
    """The call and mark records of one parsed file, or of one part of it whose first conversation is the file's
    ``first`` (counted into ``summary``)."""
    rules = rules or options.effective_rules()
    mode = Mode.CUTOVER if options.variant is Variant.STRUCTURED else Mode.SHADOW
    for index, conversation in enumerate(read.parsed.conversations, first):
        summary.conversations += 1
        sid = session_of(conversation, read, index)
        counts = Summary()
        try:
            found = list(_conversation_records(conversation, sid, read, options, counts, rules, mode))
        except (ValueError, RecursionError) as exc:  # one bad record: skipped with its place and reason
            summary.report([Problem(conversation.where, f"{unreadable(exc)}; the conversation is skipped")])
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
    """Every file parsed and held whole (for a look at small files; ``import_files`` streams); a file that cannot
    be read raises ``FormatError``, and ids that name several conversations of this import ``IdCollision``."""
    with scanned(paths, options) as sources:
        return [_held(source, options) for source in sources]


def write(
    sources: Sequence[Source], url: str, options: ImportOptions, *, dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Summary:
    """Write the records of scanned files to the call log at ``url`` as they are read, ``BATCH`` at a time;
    ``progress(n)`` as ``n`` more bytes are read."""
    summary = Summary()
    rules = options.effective_rules()
    store = SqlStore(url)
    if not dry_run:
        migrate.ensure(store.url)
    batch: list[Record] = []

    def flush() -> None:
        if batch and not dry_run:
            different: list[Problem] = []
            summary.already_present += _present(store.url, batch, different)
            summary.report({p.where: p for p in different}.values())
            store.write(batch)
        summary.written += len(batch)
        batch.clear()

    for source in sources:
        summary.files += 1
        index = done = 0
        for parsed, offset in parts(source, options):
            summary.report(parsed.problems)
            read = ReadFile(Path(source.name), source.digest, source.mtime, parsed)
            for record in records(read, options, summary, rules, first=index):
                batch.append(record)
                if len(batch) >= BATCH:
                    flush()
            index += len(parsed.conversations)
            if progress is not None:
                progress(offset - done)
            done = offset
    flush()
    summary.written -= summary.already_present
    return summary


def import_files(
    paths: Iterable[str | Path], url: str, options: ImportOptions, *, dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Summary:
    """Check every file first (one that cannot be read, or an ``--id-key`` naming two conversations, raises
    ``FormatError`` before anything is written), then read them again and write their records to the call log at
    ``url`` as they are read; importing a file twice adds nothing."""
    with scanned(paths, options) as sources:
        return write(sources, url, options, dry_run=dry_run, progress=progress)
