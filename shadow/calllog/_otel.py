"""Call records out through OpenTelemetry: GenAI ``execute_tool`` spans (marks as span events) via the SDK's OTLP.

``OtlpStore`` is a ``Store``: hand it to the writer (``set_writer(Writer(OtlpStore.from_url(...), ...))``, or
``SHADOW_DB_URL=otlp+http://collector:4318`` where the writer builds its store with ``store_for_url``) and every
record becomes one span through the SDK's ``OTLPSpanExporter`` (HTTP/protobuf) and ``BatchSpanProcessor``. A
collector routes them on (Parquet, ClickHouse, Langfuse, ...). Needs the ``otel`` extra; imported only when used.

Attributes follow the GenAI semantic conventions (``gen_ai.operation.name``, ``gen_ai.tool.name``,
``gen_ai.tool.call.id``, ``gen_ai.conversation.id``, ``error.type``) plus ``shadow.*`` for the contract's fields.
Arguments (``gen_ai.tool.call.arguments``) and payloads (``gen_ai.tool.call.result``, ``shadow.legacy_payload``,
``shadow.new_payload``) are opt-in, as in the conventions; they are the record's values, redacted and truncated
exactly as the database stores them. A mark (user turn, end) becomes an event on the span of the call before it
in the same batch, else a zero-length ``shadow.mark`` span of its own.

When the application already traces the tool call (a recording span for it, ``execute_tool`` by the GenAI
conventions or one naming the tool, is current where the tool is called), the same attributes go on that span
instead of a new one, once per span (a request span around several calls is left alone): ``OtlpStore`` turns on
``annotate_spans()``, the adapter then hands each call to ``annotate_pending``, and the store exports no span of its
own for an ``AnnotatedCall``.
Off (the default, and with any other store unless ``annotate_spans()`` is called), the adapter reads one global.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs, urlsplit, urlunsplit

from shadow._logs import get_logger
from shadow.calllog._records import CallRecord, MarkRecord

if TYPE_CHECKING:
    from shadow.calllog._records import Record
    from shadow.typing import Deferred

log = get_logger("shadow.otel")

#: URL schemes of the OTLP store (``SHADOW_DB_URL``).
SCHEMES: Final = {"otlp+http": "http", "otlp+https": "https"}
_TRUE: Final = {"1", "true", "yes", "on"}


def attributes(record: CallRecord, *, arguments: bool = False, payloads: bool = False) -> dict[str, Any]:
    """A call record as span attributes (no ``None`` values: OpenTelemetry drops them anyway)."""
    out: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": record.tool,
        "gen_ai.tool.call.id": record.id,
        "gen_ai.conversation.id": record.session_id,
        "shadow.seq": record.seq,
        "shadow.mode": record.mode,
        "shadow.variant": record.variant,
        "shadow.outcome": record.outcome,
        "shadow.fingerprint": record.fingerprint,
        "shadow.unmapped": record.unmapped,
        "shadow.schema_valid": record.schema_valid,
        "shadow.latency_us": record.latency_us,
        "shadow.source": record.source,
    }
    optional = {"shadow.code": record.code, "shadow.retryable": record.retryable,
                "shadow.next_action": record.next_action, "shadow.retry_after_ms": record.retry_after_ms,
                "shadow.error_field": record.error_field, "shadow.rule": record.rule,
                "shadow.flag_source": record.flag_source, "shadow.rules_fingerprint": record.rules_fingerprint}
    out.update({k: v for k, v in optional.items() if v is not None})
    if record.arg_hashes is not None:  # hashes, not values: what repair analysis compares, safe to send
        out["shadow.arg_hashes"] = json.dumps(record.arg_hashes)
    if record.outcome == "error":
        out["error.type"] = record.code or "error"
    if arguments and record.args is not None:
        out["gen_ai.tool.call.arguments"] = json.dumps(record.args, sort_keys=True)
    if payloads:
        served = record.new_payload if record.variant == "structured" else record.legacy_payload
        if served is not None:
            out["gen_ai.tool.call.result"] = json.dumps(served)
        for name in ("legacy_payload", "new_payload"):
            value = getattr(record, name)
            if value is not None:
                out[f"shadow.{name}"] = json.dumps(value)
    return out


#: Marks of a span made for one tool call: the GenAI conventions' operation, OpenInference's span kind, or a tool name.
_TOOL_SPAN_NAME: Final = "execute_tool"
_claim_lock = threading.Lock()


def _tool_call_span(span: Any, tool: str | None) -> bool:
    """Whether ``span`` is the application's span for one tool call (of ``tool``, when it names one) that no shadowed
    call has annotated yet. A request or agent span around several calls is not: each call gets its own span."""
    attrs = getattr(span, "attributes", None)  # the SDK's spans; a span that shows none cannot be told apart
    if not isinstance(attrs, Mapping) or "shadow.seq" in attrs:
        return False
    named = attrs.get("gen_ai.tool.name")
    if named is not None and tool is not None and named != tool:  # another tool's span: this call is nested in it
        return False
    return (attrs.get("gen_ai.operation.name") == _TOOL_SPAN_NAME
            or str(getattr(span, "name", "")).startswith(_TOOL_SPAN_NAME)
            or attrs.get("openinference.span.kind") == "TOOL" or named is not None)


def annotate_current_span(record: CallRecord, *, arguments: bool = False, payloads: bool = False) -> bool:
    """Put the record's attributes on the application's span for this tool call, if one is current and recording
    (``execute_tool`` by the GenAI conventions, or a span naming the tool); True when it did.

    A span annotated once is not annotated again, and any other current span (a request around several calls) is
    left alone: the call is then exported as a span of its own. Cheap when OpenTelemetry is not in use: it is never
    imported here, only looked up among loaded modules.
    """
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return False
    span = trace.get_current_span()
    if not span.is_recording():
        return False
    with _claim_lock:  # one call per span, even when threads share the span
        if not _tool_call_span(span, record.tool):
            return False
        span.set_attributes(attributes(record, arguments=arguments, payloads=payloads))
    if record.outcome == "error":
        span.set_status(trace.Status(trace.StatusCode.ERROR, record.code or "error"))
    return True


@dataclass(frozen=True, slots=True)
class AnnotatedCall(CallRecord):
    """A call record whose attributes went on the application's span: stored as any record, but ``OtlpStore``
    exports no span of its own for it."""


_CALL_FIELDS: Final = tuple(f.name for f in dataclasses.fields(CallRecord))


def annotate_pending(item: Deferred, *, arguments: bool = False, payloads: bool = False) -> Record | Deferred:
    """The adapter's hook (set by ``annotate_spans``): ``get_writer().submit(annotate_pending(item))``.

    Without a recording application span (the common case: one dictionary lookup) ``item`` goes on unchanged and
    the writer thread builds the record. With one, the record is built here, on the call's thread, its attributes
    go on the application's span, and the built record (an ``AnnotatedCall``) is what the writer stores: the span's
    ``gen_ai.tool.call.id`` is the stored record's id. A failure here never reaches the tool call.
    """
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return item
    try:
        span = trace.get_current_span()
        if not span.is_recording() or not _tool_call_span(span, None):
            return item
        record = item.build()
        if isinstance(record, CallRecord) and annotate_current_span(record, arguments=arguments, payloads=payloads):
            return AnnotatedCall(*(getattr(record, name) for name in _CALL_FIELDS))
        return record
    except Exception as exc:  # shadow's machinery never breaks the call; the writer builds the record as usual
        log.warning("otel_annotate_failed", error_type=type(exc).__name__)
        return item


#: What a call goes through on its way to the writer, or None (the default: nothing, one attribute read per call).
#: ``shadow.calllog.annotate_spans()`` (called by ``OtlpStore``) sets it to put the record on the caller's span.
CALL_HOOK: Callable[[Deferred], Any] | None = None


def annotate_spans(enabled: bool = True, *, arguments: bool = False, payloads: bool = False) -> None:
    """Put each shadowed call's attributes on the application's span when one is recording where the tool is
    called (``OtlpStore`` turns this on; call it yourself to annotate application spans with another store).

    Off, the adapter reads one global per call; on, a call made outside any span costs one dictionary lookup
    more, and a call inside a recording span builds its record on the caller's thread. ``arguments`` and
    ``payloads`` opt in to those attributes, as for ``OtlpStore``. Never imports OpenTelemetry.
    """
    global CALL_HOOK
    CALL_HOOK = (functools.partial(annotate_pending, arguments=arguments, payloads=payloads)
                          if enabled else None)


_open_lock = threading.Lock()
_open_stores: list[OtlpStore] = []  # the OTLP stores not closed yet; the latest one's options annotate spans


def _ns(record: CallRecord | MarkRecord) -> int:
    return int(record.ts.timestamp() * 1_000_000) * 1000


class OtlpStore:
    """A ``Store`` exporting call records as OTLP spans through the OpenTelemetry SDK (its own tracer provider)."""

    def __init__(self, endpoint: str, *, arguments: bool = False, payloads: bool = False,
                 headers: Mapping[str, str] | None = None, timeout: float = 10.0, service_name: str = "shadow",
                 schedule_delay_millis: int = 1000, max_queue_size: int = 20_000) -> None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            raise RuntimeError(f"the OTLP store needs the 'otel' extra ({exc.name} is not installed): "
                               "pip install 'shadow-errors[otel]'") from None
        self.endpoint = endpoint
        self.arguments = arguments
        self.payloads = payloads
        self._provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        exporter = OTLPSpanExporter(endpoint=endpoint, headers=dict(headers or {}), timeout=int(timeout))
        self._provider.add_span_processor(BatchSpanProcessor(
            exporter, max_queue_size=max_queue_size, schedule_delay_millis=schedule_delay_millis))
        self._tracer = self._provider.get_tracer("shadow")
        with _open_lock:  # an application span takes the record instead, while an OTLP store is open
            _open_stores.append(self)
            annotate_spans(arguments=arguments, payloads=payloads)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> OtlpStore:
        """``otlp+http://host:4318[/v1/traces][?arguments=1&payloads=1]`` (or ``otlp+https://``)."""
        parts = urlsplit(url)
        if parts.scheme not in SCHEMES:
            raise ValueError(f"{url!r} is not an OTLP store URL; use otlp+http://collector:4318 or otlp+https://...")
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = set(query) - {"arguments", "payloads"}
        if unknown:
            raise ValueError(f"unknown OTLP store option(s) {sorted(unknown)} in {url!r}; known: arguments, payloads")
        path = parts.path if parts.path not in ("", "/") else "/v1/traces"
        endpoint = urlunsplit((SCHEMES[parts.scheme], parts.netloc, path, "", ""))
        flags: dict[str, bool] = {k: query[k].lower() in _TRUE for k in ("arguments", "payloads") if k in query}
        return cls(endpoint, **{**flags, **options})

    @property
    def display_url(self) -> str:
        """The endpoint, for messages."""
        return self.endpoint

    def _parent(self, session_id: str) -> Any:
        """A remote parent per session: a session's calls share one trace (when no application span exists)."""
        from opentelemetry import trace

        digest = hashlib.sha256(session_id.encode()).digest()
        ctx = trace.SpanContext(trace_id=int.from_bytes(digest[:16], "big") or 1,
                                span_id=int.from_bytes(digest[16:24], "big") or 1, is_remote=True,
                                trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))
        return trace.set_span_in_context(trace.NonRecordingSpan(ctx))

    def write(self, records: Sequence[Record]) -> None:
        """One span per call (none for an ``AnnotatedCall``); a mark becomes an event on the span of its session's
    previous call in ``records``."""
        from opentelemetry.trace import SpanKind, Status, StatusCode

        open_spans: dict[str, tuple[Any, int]] = {}  # session -> (span, end time), ended after the batch
        try:
            for record in records:
                if isinstance(record, AnnotatedCall):  # on the application's span already: no span of its own
                    previous = open_spans.pop(record.session_id, None)
                    if previous is not None:  # a mark after this call is not an event of the call before it
                        previous[0].end(end_time=previous[1])
                    continue
                if isinstance(record, CallRecord):
                    start = _ns(record)
                    span = self._tracer.start_span(
                        f"execute_tool {record.tool}", context=self._parent(record.session_id),
                        kind=SpanKind.INTERNAL, start_time=start,
                        attributes=attributes(record, arguments=self.arguments, payloads=self.payloads))
                    if record.outcome == "error":
                        span.set_status(Status(StatusCode.ERROR, record.code or "error"))
                    previous = open_spans.pop(record.session_id, None)
                    if previous is not None:
                        previous[0].end(end_time=previous[1])
                    open_spans[record.session_id] = (span, start + record.latency_us * 1000)
                elif isinstance(record, MarkRecord):
                    event: dict[str, Any] = {"shadow.mark.id": record.id, "shadow.seq": record.seq,
                                             "shadow.mark.kind": record.kind}
                    holder = open_spans.get(record.session_id)
                    if holder is not None:
                        holder[0].add_event(f"shadow.mark.{record.kind}", event, timestamp=_ns(record))
                        continue
                    span = self._tracer.start_span(
                        f"shadow.mark {record.kind}", context=self._parent(record.session_id), start_time=_ns(record),
                        attributes={"gen_ai.conversation.id": record.session_id, "shadow.seq": record.seq})
                    span.add_event(f"shadow.mark.{record.kind}", event, timestamp=_ns(record))
                    span.end(end_time=_ns(record))
        finally:
            for span, end in open_spans.values():
                span.end(end_time=end)

    def flush(self, timeout: float = 30.0) -> bool:
        """Export every span handed over so far; False when the exporter did not finish in ``timeout`` seconds."""
        return bool(self._provider.force_flush(int(timeout * 1000)))

    def close(self) -> None:
        """Flush and shut the exporter down; with the last open OTLP store, stop annotating application spans."""
        with _open_lock:
            if self in _open_stores:
                _open_stores.remove(self)
                if _open_stores:
                    last = _open_stores[-1]
                    annotate_spans(arguments=last.arguments, payloads=last.payloads)
                else:
                    annotate_spans(False)
        self._provider.shutdown()


def store_for_url(url: str) -> OtlpStore | None:
    """The OTLP store for an ``otlp+http(s)://`` URL, else None (a database URL: the writer's ``SqlStore``)."""
    if urlsplit(url).scheme in SCHEMES:
        return OtlpStore.from_url(url)
    return None
