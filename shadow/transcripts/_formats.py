"""The chat transcript formats ``shadow import`` reads: OpenAI Chat Completions and Anthropic Messages."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

Format = Literal["openai", "anthropic", "otel"]
FORMATS: Final[tuple[Format, ...]] = ("openai", "anthropic", "otel")

#: Keys under which a record holds its message list, tried in order (dotted: nested).
MESSAGES_KEYS: Final = ("messages", "conversation", "chat", "body.messages", "request.messages", "params.messages")
#: Keys that name a conversation, tried in order.
ID_KEYS: Final = ("conversation_id", "session_id", "thread_id", "custom_id", "id")
#: Keys holding a time (ISO 8601 or Unix seconds/milliseconds), on a message or a record.
TIME_KEYS: Final = ("timestamp", "created_at", "created", "time", "ts")

_MAX_ID: Final = 200


class FormatError(ValueError):
    """A whole file cannot be read in the chosen format; the message says why and how to fix it."""


@dataclass(frozen=True, slots=True)
class Problem:
    """A malformed record, skipped: where it is and what is wrong."""

    where: str
    message: str


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call with its result as the model saw it."""

    tool: str
    arguments: dict[str, Any]
    result: object  # the result content: text, content blocks, or None when not recorded
    is_error: bool | None  # the format's explicit flag; None when it has none
    where: str
    ts: dt.datetime | None = None
    latency_us: int = 0
    call_id: str | None = None
    arguments_recorded: bool = True
    variant: str | None = None  # the arm the call was served in, when the source says (else the import's)
    #: What shadow itself recorded of the call (a span its OTLP store exported: ``shadow.code``, ``fingerprint``,
    #: ...), kept as recorded instead of derived again from the result; None for any other source.
    recorded: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Mark:
    """A hand-over: ``user_turn`` (a person spoke between calls) or ``end`` (the agent gave its final answer)."""

    kind: Literal["user_turn", "end"]
    where: str
    ts: dt.datetime | None = None


Event = Call | Mark


@dataclass(slots=True)
class Conversation:
    """One agent session read from a transcript: its calls and marks in order."""

    where: str
    conversation_id: str | None
    events: list[Event] = field(default_factory=list)
    ts: dt.datetime | None = None


@dataclass(slots=True)
class Parsed:
    """What one file held."""

    conversations: list[Conversation] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


# ---------------------------------------------------------------- reading JSON, JSON lines, concatenated JSON


def documents(text: str, name: str) -> Iterator[tuple[str, object] | Problem]:
    """The JSON documents in ``text``: one JSON value, JSON lines, or JSON values one after another."""
    stripped = text.strip()
    if not stripped:
        raise FormatError(f"{name} is empty; pass a JSON or JSON lines file")
    try:
        yield "", json.loads(stripped)
        return
    except (ValueError, RecursionError) as whole:
        first_error = whole
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    parsed = [line_document(number, line, name) for number, line in lines]
    good = sum(not isinstance(item, Problem) for item in parsed)
    if good and good == len(parsed):
        yield from parsed
        return
    sequence = _concatenated(stripped)
    if sequence is not None:
        yield from ((f"document {i + 1}", doc) for i, doc in enumerate(sequence))
        return
    if good:
        yield from parsed
        return
    where = (f"line {first_error.lineno}, column {first_error.colno}: {first_error.msg}"
             if isinstance(first_error, json.JSONDecodeError) else unreadable(first_error))
    raise FormatError(f"{name} is neither JSON nor JSON lines ({where}); check that it is an export of transcripts")


def line_document(number: int, line: str, name: str) -> tuple[str, object] | Problem:
    """Line ``number`` of a JSON lines file as ``("line N", document)``, or the ``Problem`` that skips it."""
    try:
        return f"line {number}", json.loads(line)
    except json.JSONDecodeError as exc:
        return Problem(f"{name}:line {number}", f"not JSON ({exc.msg} at column {exc.colno}); skipped")
    except (ValueError, RecursionError) as exc:
        return Problem(f"{name}:line {number}", f"{unreadable(exc)}; skipped")


def unreadable(exc: BaseException) -> str:
    """Why a JSON text or a record could not be read, in words (deep nesting, a huge number, bad JSON, ...)."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
    if isinstance(exc, UnicodeError):
        return "not valid Unicode text (a lone surrogate)"
    return str(exc)[:240] or type(exc).__name__


def _concatenated(text: str) -> list[object] | None:
    decoder = json.JSONDecoder()
    found: list[object] = []
    index = 0
    while index < len(text):
        try:
            value, end = decoder.raw_decode(text, index)
        except (ValueError, RecursionError):
            return None
        found.append(value)
        index = end
        while index < len(text) and text[index] in " \t\r\n,":
            index += 1
    return found if len(found) > 1 else None


def dig(record: Mapping[str, Any], key: str) -> object:
    """``record[key]`` where ``key`` may be dotted (``body.messages``)."""
    current: object = record
    for part in key.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def when(value: object) -> dt.datetime | None:
    """A time from an ISO 8601 string or Unix seconds, milliseconds or nanoseconds; None when it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value)
        for threshold, scale in ((1e17, 1e9), (1e14, 1e6), (1e11, 1e3)):  # ns, µs, ms since the epoch
            if abs(seconds) >= threshold:
                seconds /= scale
                break
        try:
            return dt.datetime.fromtimestamp(seconds, dt.UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value.strip():
        text = value.strip()
        if text.isdigit():
            return when(int(text))
        try:
            parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    return None


def time_of(item: Mapping[str, Any]) -> dt.datetime | None:
    """The first recognised time key of a message or record."""
    for key in TIME_KEYS:
        found = when(item.get(key))
        if found is not None:
            return found
    return None


def conversation_id(record: Mapping[str, Any], id_key: str | None) -> str | None:
    """The record's conversation id (``id_key``, else the first of ``ID_KEYS`` present); a combined key
    (``task_id,trial``) joins its parts with ``/`` and needs them all."""
    if id_key and "," in id_key:
        parts = [conversation_id(record, key.strip()) for key in id_key.split(",") if key.strip()]
        return "/".join(p for p in parts if p is not None)[:_MAX_ID] if parts and None not in parts else None
    for key in ((id_key,) if id_key else ID_KEYS):
        found = dig(record, key)
        if isinstance(found, str | int) and not isinstance(found, bool) and str(found).strip():
            return str(found).strip()[:_MAX_ID]
    return None


def parse_arguments(raw: object) -> dict[str, Any]:
    """Call arguments as a mapping, parsed as the live adapter would see them (a JSON string is decoded).

    Arguments that are not a JSON object are kept whole, so identical raw arguments still fingerprint alike.
    """
    if raw is None or raw == "":
        return {}
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {"_unparsed_arguments": raw}
        except RecursionError:
            raise ValueError("the arguments are nested too deeply to read") from None
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    return {"_arguments": value}


def text_of(content: object) -> str | None:
    """The text of message content: a string, or the text parts of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, bytes):
        parts = [str(b.get("text")) for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
        return "\n".join(parts) if parts else None
    return None
