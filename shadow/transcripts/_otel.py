"""OpenTelemetry GenAI ``execute_tool`` spans (OTLP JSON or the SDK's console export) as conversations to import."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from shadow.transcripts._formats import Call, Conversation, Mark, Parsed, Problem, documents, parse_arguments, when
from shadow.transcripts._recorded import recorded_fields

TOOL_NAME: Final = "gen_ai.tool.name"
CALL_ID: Final = "gen_ai.tool.call.id"
ARGUMENTS: Final = "gen_ai.tool.call.arguments"
RESULT: Final = "gen_ai.tool.call.result"
CONVERSATION: Final = "gen_ai.conversation.id"
OPERATION: Final = "gen_ai.operation.name"
ERROR_TYPE: Final = "error.type"
VARIANT: Final = "shadow.variant"
MARK_EVENT: Final = "shadow.mark."
_MAX_DEPTH: Final = 200


@dataclass(frozen=True, slots=True)
class Span:
    """The parts of a span the importer reads."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any]
    error: bool
    status_message: str | None
    where: str
    events: tuple[tuple[str, int], ...] = ()  # (name, time in ns)

    def operation(self) -> str:
        """``gen_ai.operation.name``, else the first word of the span name."""
        found = self.attributes.get(OPERATION)
        return str(found) if isinstance(found, str) else self.name.split(" ", 1)[0]


def _any_value(value: object) -> object:
    """An OTLP ``AnyValue`` as plain data."""
    if not isinstance(value, Mapping):
        return value
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "arrayValue" in value:
        items = value["arrayValue"].get("values", []) if isinstance(value["arrayValue"], Mapping) else []
        return [_any_value(v) for v in items]
    if "kvlistValue" in value:
        items = value["kvlistValue"].get("values", []) if isinstance(value["kvlistValue"], Mapping) else []
        return {str(kv.get("key")): _any_value(kv.get("value")) for kv in items if isinstance(kv, Mapping)}
    return None


def _attributes(raw: object) -> dict[str, Any]:
    if isinstance(raw, list):
        return {str(kv.get("key")): _any_value(kv.get("value")) for kv in raw if isinstance(kv, Mapping)}
    if isinstance(raw, Mapping):
        return {str(k): v for k, v in raw.items()}
    return {}


def _ns(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    found = when(value)
    return int(found.timestamp() * 1e9) if found is not None else None


def _hex(value: object) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().lower()
    return text[2:] if text.startswith("0x") else text


def _span(raw: Mapping[str, Any], where: str) -> Span | Problem:
    """A span from OTLP JSON (``traceId``, ``startTimeUnixNano``) or the SDK's console JSON (``context``)."""
    found_context = raw.get("context")
    context: Mapping[str, Any] = found_context if isinstance(found_context, Mapping) else {}
    trace_id = _hex(raw.get("traceId")) or _hex(context.get("trace_id"))
    span_id = _hex(raw.get("spanId")) or _hex(context.get("span_id"))
    start = _ns(raw.get("startTimeUnixNano", raw.get("start_time")))
    end = _ns(raw.get("endTimeUnixNano", raw.get("end_time")))
    name = raw.get("name")
    if trace_id is None or span_id is None or start is None or not isinstance(name, str):
        return Problem(where, "a span needs a name, a trace id, a span id and a start time; skipped")
    found_status = raw.get("status")
    status: Mapping[str, Any] = found_status if isinstance(found_status, Mapping) else {}
    code = status.get("code", status.get("status_code"))
    error = code in (2, "2", "STATUS_CODE_ERROR", "ERROR", "error")
    message = status.get("message", status.get("description"))
    events = tuple((str(e.get("name")), _ns(e.get("timeUnixNano", e.get("timestamp"))) or start)
                   for e in raw.get("events") or [] if isinstance(e, Mapping))
    return Span(trace_id, span_id, _hex(raw.get("parentSpanId")) or _hex(raw.get("parent_id")), name, start,
                end if end is not None and end >= start else start, _attributes(raw.get("attributes")), error,
                message if isinstance(message, str) and message else None, where, events)


def _spans(doc: object, where: str, problems: list[Problem]) -> Iterator[Span]:
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            yield from _spans(item, f"{where}[{i}]", problems)
        return
    if not isinstance(doc, Mapping):
        problems.append(Problem(where, f"a {type(doc).__name__} is not a span or an OTLP export; skipped"))
        return
    if "resourceSpans" in doc:
        for r, resource in enumerate(doc.get("resourceSpans") or []):
            scopes = (resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or []
                      if isinstance(resource, Mapping) else [])
            for s, scope in enumerate(scopes):
                for i, raw in enumerate(scope.get("spans") or [] if isinstance(scope, Mapping) else []):
                    at = f"{where}{'.' if where[-1:] != ':' else ''}resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                    found = _span(raw, at) if isinstance(raw, Mapping) else Problem(at, "a span must be an object")
                    if isinstance(found, Problem):
                        problems.append(found)
                    else:
                        yield found
        return
    found = _span(doc, where)
    if isinstance(found, Problem):
        problems.append(found)
    else:
        yield found


def _is_tool(span: Span) -> bool:
    return span.operation() == "execute_tool" or TOOL_NAME in span.attributes


def _ancestors(span: Span, index: Mapping[tuple[str, str], Span]) -> Iterator[Span]:
    current, seen = span, 0
    while current.parent_id and seen < _MAX_DEPTH:
        parent = index.get((current.trace_id, current.parent_id))
        if parent is None:
            return
        yield parent
        current, seen = parent, seen + 1


def _error_value(span: Span) -> dict[str, Any]:
    kind = span.attributes.get(ERROR_TYPE)
    value: dict[str, Any] = {"ok": False, "error": span.status_message or (str(kind) if kind else "error")}
    if kind is not None:
        value["error_type"] = str(kind)
        if str(kind).isdigit() and 400 <= int(str(kind)) <= 599:
            value["status"] = int(str(kind))
    return value


def _call(span: Span) -> Call | Problem:
    tool = span.attributes.get(TOOL_NAME)
    if not isinstance(tool, str) or not tool.strip():
        return Problem(span.where, f"an execute_tool span without {TOOL_NAME}; skipped")
    error = span.error or span.attributes.get(ERROR_TYPE) is not None
    result = span.attributes.get(RESULT)
    if error and result is None:
        result = _error_value(span)
    raw_args = span.attributes.get(ARGUMENTS)
    call_id = span.attributes.get(CALL_ID)
    recorded = raw_args is not None
    # Arguments are opt-in in the conventions: without them every call would fingerprint alike and look like a
    # loop, so an unrecorded call gets arguments unique to it (it can never count as a repeat).
    arguments = parse_arguments(raw_args) if recorded else {"_unrecorded": f"{span.trace_id}:{span.span_id}"}
    variant = span.attributes.get(VARIANT)  # the arm, when shadow's OTLP store exported the span
    return Call(tool.strip()[:200], arguments, result, True if error else None, span.where,
                dt.datetime.fromtimestamp(span.start_ns / 1e9, dt.UTC), (span.end_ns - span.start_ns) // 1000,
                str(call_id) if call_id is not None else span.span_id, recorded,
                variant if variant in ("legacy", "structured") else None, recorded_fields(span.attributes))


def _is_mark(span: Span) -> bool:
    return span.name.startswith("shadow.mark") and bool(span.attributes.get(CONVERSATION))


def _marks(span: Span) -> list[Mark]:
    """User turns and ends exported by shadow's OTLP store as ``shadow.mark.<kind>`` span events."""
    out = []
    for event, at in sorted(span.events, key=lambda e: e[1]):
        at_time = dt.datetime.fromtimestamp(at / 1e9, dt.UTC)
        if event == f"{MARK_EVENT}user_turn":
            out.append(Mark("user_turn", span.where, at_time))
        elif event == f"{MARK_EVENT}end":
            out.append(Mark("end", span.where, at_time))
    return out


def parse_otel(text: str, name: str) -> Parsed:
    """Conversations from exported spans: ``execute_tool`` spans grouped by ``gen_ai.conversation.id`` (else by
    trace), ordered by start time; a new ``invoke_agent`` parent between two calls is a user turn."""
    return otel_documents(documents(text, name), name)


def otel_documents(docs: Iterable[tuple[str, object] | Problem], name: str) -> Parsed:
    """``parse_otel`` of JSON documents already read (``(where, document)`` or a ``Problem``): the spans of all of
    them are held, since one conversation's spans may be anywhere in the file."""
    parsed = Parsed()
    spans: list[Span] = []
    for item in docs:
        if isinstance(item, Problem):
            parsed.problems.append(item)
            continue
        where, doc = item
        spans.extend(_spans(doc, f"{name}:{where}", parsed.problems))
    index = {(s.trace_id, s.span_id): s for s in spans}
    groups: dict[str, list[tuple[Span, str | None]]] = {}
    for span in spans:
        if not _is_tool(span) and not _is_mark(span):
            continue
        lineage = [span, *_ancestors(span, index)]
        conv = next((str(s.attributes[CONVERSATION]) for s in lineage if s.attributes.get(CONVERSATION)), None)
        agent = next((s.span_id for s in lineage[1:] if s.operation() == "invoke_agent"), None)
        groups.setdefault(conv or f"trace-{span.trace_id}", []).append((span, agent))
    for key, members in groups.items():
        members.sort(key=lambda pair: (pair[0].start_ns, pair[0].span_id))
        conversation = Conversation(members[0][0].where, key[:200])
        previous_agent: str | None = None
        for span, agent in members:
            if not _is_tool(span):  # a mark shadow's OTLP store could not attach to a call span
                conversation.events.extend(_marks(span))
                continue
            found = _call(span)
            if isinstance(found, Problem):
                parsed.problems.append(found)
                continue
            if conversation.events and agent is not None and previous_agent is not None and agent != previous_agent:
                conversation.events.append(Mark("user_turn", span.where, found.ts))
            previous_agent = agent if agent is not None else previous_agent
            conversation.events.append(found)
            conversation.events.extend(_marks(span))
        if conversation.events:
            parsed.conversations.append(conversation)
    return parsed
