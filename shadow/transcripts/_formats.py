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
    parsed: list[tuple[str, object] | Problem] = []
    good = 0
    for number, line in lines:
        try:
            parsed.append((f"line {number}", json.loads(line)))
            good += 1
        except json.JSONDecodeError as exc:
            parsed.append(Problem(f"{name}:line {number}", f"not JSON ({exc.msg} at column {exc.colno}); skipped"))
        except (ValueError, RecursionError) as exc:
            parsed.append(Problem(f"{name}:line {number}", f"{unreadable(exc)}; skipped"))
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
    """The record's conversation id (``id_key``, else the first of ``ID_KEYS`` present)."""
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


# ---------------------------------------------------------------- chat formats (OpenAI, Anthropic)


def _records(doc: object, where: str, messages_key: str | None, name: str,
             problems: list[Problem]) -> Iterator[tuple[str, list[Any], Mapping[str, Any]]]:
    """(where, messages, record) for each conversation a document holds."""
    if isinstance(doc, list) and doc and all(isinstance(m, Mapping) and "role" in m for m in doc):
        yield where or "[0]", doc, {}
        return
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            inner = f"{where}[{i}]" if where else f"[{i}]"
            yield from _records(item, inner, messages_key, name, problems)
        return
    if isinstance(doc, Mapping):
        for key in ((messages_key,) if messages_key else MESSAGES_KEYS):
            found = dig(doc, key)
            if isinstance(found, list):
                yield where, found, doc
                return
        keys = f"--messages-key {messages_key}" if messages_key else "any of " + ", ".join(MESSAGES_KEYS)
        problems.append(Problem(f"{name}:{where or 'document'}",
                                f"no message list under {keys}; skipped (pass --messages-key KEY)"))
        return
    problems.append(Problem(f"{name}:{where or 'document'}",
                            f"a {type(doc).__name__} is not a conversation; skipped"))


def parse_chat(fmt: Format, text: str, name: str, *, messages_key: str | None = None,
               id_key: str | None = None) -> Parsed:
    """Conversations from an OpenAI or Anthropic transcript file."""
    parsed = Parsed()
    for item in documents(text, name):
        if isinstance(item, Problem):
            parsed.problems.append(item)
            continue
        where, doc = item
        for inner, messages, record in _records(doc, where, messages_key, name, parsed.problems):
            label = f"{name}:{inner}" if inner else name
            conversation = Conversation(label, conversation_id(record, id_key), ts=time_of(record))
            reader = _openai_messages if fmt == "openai" else _anthropic_messages
            try:
                reader(messages, label, conversation, parsed.problems)
            except (ValueError, RecursionError) as exc:  # one bad record: skipped, the rest is read
                parsed.problems.append(Problem(label, f"{unreadable(exc)}; the conversation is skipped"))
                continue
            parsed.conversations.append(conversation)
    return parsed


@dataclass(slots=True)
class _Pending:
    tool: str
    arguments: dict[str, Any]
    where: str
    ts: dt.datetime | None
    slot: int
    call_id: str


class _Builder:
    """Places calls where the model made them and fills in their results as they arrive."""

    def __init__(self, conversation: Conversation, problems: list[Problem]) -> None:
        self.conversation, self.problems = conversation, problems
        self.slots: list[Event | _Pending] = []
        self.pending: dict[str, _Pending] = {}
        self.calls_seen = False

    def call(self, call_id: str, tool: object, arguments: object, where: str, ts: dt.datetime | None) -> None:
        if not isinstance(tool, str) or not tool.strip():
            self.problems.append(Problem(where, "a tool call without a tool name; skipped"))
            return
        if call_id in self.pending:
            self.problems.append(Problem(where, f"tool call id {call_id!r} is used twice; the second is skipped"))
            return
        item = _Pending(tool.strip()[:200], parse_arguments(arguments), where, ts, len(self.slots), call_id)
        self.slots.append(item)
        self.pending[call_id] = item
        self.calls_seen = True

    def result(self, call_id: object, content: object, is_error: bool | None, where: str) -> None:
        item = self.pending.pop(str(call_id), None) if isinstance(call_id, str | int) else None
        if item is None:
            self.problems.append(Problem(where, f"a tool result for unknown call id {call_id!r}; skipped"))
            return
        self.slots[item.slot] = Call(item.tool, item.arguments, content, is_error, item.where, item.ts,
                                     call_id=item.call_id)

    def user_turn(self, where: str, ts: dt.datetime | None) -> None:
        if self.calls_seen and not (self.slots and isinstance(self.slots[-1], Mark)):
            self.slots.append(Mark("user_turn", where, ts))

    def finish(self, ended: bool, where: str) -> None:
        for item in self.pending.values():
            self.problems.append(Problem(item.where, f"tool call {item.call_id!r} ({item.tool}) has no result; "
                                                     "skipped"))
        events = [slot for slot in self.slots if not isinstance(slot, _Pending)]
        if ended and self.calls_seen:
            events.append(Mark("end", where))
        self.conversation.events = events


def _openai_messages(messages: list[Any], label: str, conversation: Conversation,
                     problems: list[Problem]) -> None:
    build = _Builder(conversation, problems)
    ended = False
    last_function: list[str] = []
    for i, message in enumerate(messages):
        where = f"{label}.messages[{i}]"
        if not isinstance(message, Mapping):
            problems.append(Problem(where, f"a message must be an object, not {type(message).__name__}; skipped"))
            continue
        role, ts = message.get("role"), time_of(message)
        ended = False
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list):
                problems.append(Problem(where, "tool_calls must be a list; skipped"))
                calls = []
            for j, call in enumerate(calls):
                at = f"{where}.tool_calls[{j}]"
                function = call.get("function") if isinstance(call, Mapping) else None
                if not isinstance(function, Mapping) or not isinstance(call.get("id"), str):
                    problems.append(Problem(at, "a tool call needs an id and a function {name, arguments}; skipped"))
                    continue
                build.call(call["id"], function.get("name"), function.get("arguments"), at, ts)
            legacy = message.get("function_call")
            if isinstance(legacy, Mapping):
                call_id = f"function_call@{i}"
                build.call(call_id, legacy.get("name"), legacy.get("arguments"), f"{where}.function_call", ts)
                last_function.append(call_id)
            ended = not calls and not isinstance(legacy, Mapping)
        elif role == "tool":
            build.result(message.get("tool_call_id"), message.get("content"), None, where)
        elif role == "function":
            if last_function:
                build.result(last_function.pop(), message.get("content"), None, where)
            else:
                problems.append(Problem(where, "a function message without a function_call before it; skipped"))
        elif role == "user":
            build.user_turn(where, ts)
        elif role not in ("system", "developer"):
            problems.append(Problem(where, f"unknown role {role!r}; skipped"))
    build.finish(ended, f"{label}.messages[{len(messages) - 1}]")


def _anthropic_messages(messages: list[Any], label: str, conversation: Conversation,
                        problems: list[Problem]) -> None:
    build = _Builder(conversation, problems)
    ended = False
    for i, message in enumerate(messages):
        where = f"{label}.messages[{i}]"
        if not isinstance(message, Mapping):
            problems.append(Problem(where, f"a message must be an object, not {type(message).__name__}; skipped"))
            continue
        role, ts, content = message.get("role"), time_of(message), message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            problems.append(Problem(where, "content must be a string or a list of blocks; skipped"))
            continue
        ended = False
        if role == "assistant":
            uses = 0
            for j, block in enumerate(blocks):
                if isinstance(block, Mapping) and block.get("type") in ("tool_use", "server_tool_use"):
                    uses += 1
                    call_id = block.get("id")
                    if not isinstance(call_id, str):
                        problems.append(Problem(f"{where}.content[{j}]", "a tool_use block without an id; skipped"))
                        continue
                    build.call(call_id, block.get("name"), block.get("input"), f"{where}.content[{j}]", ts)
            ended = uses == 0
        elif role == "user":
            spoke = False
            for j, block in enumerate(blocks):
                if not isinstance(block, Mapping):
                    continue
                if block.get("type") == "tool_result":
                    flag = block.get("is_error")
                    build.result(block.get("tool_use_id"), block.get("content"),
                                 flag if isinstance(flag, bool) else None, f"{where}.content[{j}]")
                elif block.get("type") == "text" and str(block.get("text", "")).strip():
                    spoke = True
            if spoke:
                build.user_turn(where, ts)
        else:
            problems.append(Problem(where, f"unknown role {role!r}; skipped"))
    build.finish(ended, f"{label}.messages[{len(messages) - 1}]")
