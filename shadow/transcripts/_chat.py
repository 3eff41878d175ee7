"""The chat transcript formats: OpenAI Chat Completions and Anthropic Messages, calls paired with their results."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from shadow.transcripts._formats import (
    MESSAGES_KEYS,
    Call,
    Conversation,
    Event,
    Format,
    Mark,
    Parsed,
    Problem,
    conversation_id,
    dig,
    documents,
    parse_arguments,
    time_of,
    unreadable,
)

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
               id_key: str | None = None, result_key: str | None = None) -> Parsed:
    """Conversations from an OpenAI or Anthropic transcript file; ``result_key`` names the key of a tool result
    that links it to its call, when not ``tool_call_id``/``tool_call_ids`` (OpenAI) or ``tool_use_id``."""
    return chat_documents(fmt, documents(text, name), name, messages_key=messages_key, id_key=id_key,
                          result_key=result_key)


def chat_documents(fmt: Format, docs: Iterable[tuple[str, object] | Problem], name: str, *,
                   messages_key: str | None = None, id_key: str | None = None,
                   result_key: str | None = None) -> Parsed:
    """Conversations from JSON documents already read (``(where, document)``, or a ``Problem`` for one that
    could not be): one line of a JSON lines file, or the documents of a whole file."""
    parsed = Parsed()
    for item in docs:
        if isinstance(item, Problem):
            parsed.problems.append(item)
            continue
        where, doc = item
        for inner, messages, record in _records(doc, where, messages_key, name, parsed.problems):
            label = f"{name}:{inner}" if inner else name
            conversation = Conversation(label, conversation_id(record, id_key), ts=time_of(record))
            reader = _openai_messages if fmt == "openai" else _anthropic_messages
            try:
                reader(messages, label, conversation, parsed.problems, result_key)
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
        self.pending: dict[str, list[_Pending]] = {}  # per call id, oldest first: a reused id pairs by position
        self.calls_seen = False

    def call(self, call_id: str, tool: object, arguments: object, where: str, ts: dt.datetime | None) -> None:
        if not isinstance(tool, str) or not tool.strip():
            self.problems.append(Problem(where, "a tool call without a tool name; skipped"))
            return
        item = _Pending(tool.strip()[:200], parse_arguments(arguments), where, ts, len(self.slots), call_id)
        self.slots.append(item)
        self.pending.setdefault(call_id, []).append(item)
        self.calls_seen = True

    def _oldest(self, call_id: object) -> _Pending | None:
        if call_id is None:  # no link at all: the oldest call still waiting for its result
            waiting = [items[0] for items in self.pending.values() if items]
            found = min(waiting, key=lambda p: p.slot) if waiting else None
        else:
            items = self.pending.get(str(call_id)) if isinstance(call_id, str | int) else None
            found = items[0] if items else None
        if found is not None:
            self.pending[found.call_id].pop(0)
            if not self.pending[found.call_id]:
                del self.pending[found.call_id]
        return found

    def result(self, call_id: object, content: object, is_error: bool | None, where: str) -> None:
        item = self._oldest(call_id)
        if item is None:
            self.problems.append(Problem(where, f"a tool result for unknown call id {call_id!r}; skipped"))
            return
        self.slots[item.slot] = Call(item.tool, item.arguments, content, is_error, item.where, item.ts,
                                     call_id=item.call_id)

    def user_turn(self, where: str, ts: dt.datetime | None) -> None:
        if self.calls_seen and not (self.slots and isinstance(self.slots[-1], Mark)):
            self.slots.append(Mark("user_turn", where, ts))

    def finish(self, ended: bool, where: str) -> None:
        for item in (p for items in self.pending.values() for p in items):
            self.problems.append(Problem(item.where, f"tool call {item.call_id!r} ({item.tool}) has no result; "
                                                     "skipped"))
        events = [slot for slot in self.slots if not isinstance(slot, _Pending)]
        if ended and self.calls_seen:
            events.append(Mark("end", where))
        self.conversation.events = events


def _links(message: Mapping[str, Any], keys: tuple[str, ...]) -> list[object]:
    """The call ids a tool result names: one id, or a list of them (``tool_call_ids: [id]``, as SWE-agent
    writes); ``[None]`` when it names none (paired with the oldest call still waiting)."""
    for key in keys:
        found = dig(message, key)
        if isinstance(found, list) and found:
            return list(found)
        if found is not None and not isinstance(found, list):
            return [found]
    return [None]


def _openai_messages(messages: list[Any], label: str, conversation: Conversation,
                     problems: list[Problem], result_key: str | None = None) -> None:
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
            for link in _links(message, (result_key,) if result_key else ("tool_call_id", "tool_call_ids")):
                build.result(link, message.get("content"), None, where)
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
                        problems: list[Problem], result_key: str | None = None) -> None:
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
                    for link in _links(block, (result_key,) if result_key else ("tool_use_id",)):
                        build.result(link, block.get("content"), flag if isinstance(flag, bool) else None,
                                     f"{where}.content[{j}]")
                elif block.get("type") == "text" and str(block.get("text", "")).strip():
                    spoke = True
            if spoke:
                build.user_turn(where, ts)
        else:
            problems.append(Problem(where, f"unknown role {role!r}; skipped"))
    build.finish(ended, f"{label}.messages[{len(messages) - 1}]")
