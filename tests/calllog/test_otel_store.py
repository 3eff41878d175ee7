"""The OTLP store: call records out as GenAI execute_tool spans to a real OTLP/HTTP receiver, and back in by import."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("opentelemetry.sdk", reason="the OTLP store needs the 'otel' extra")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the OTLP store needs the 'otel' extra")

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from shadow.analytics._report import loop_rate_report
from shadow.analytics._warehouse import Warehouse
from shadow.calllog._otel import OtlpStore, annotate_current_span, annotate_pending, attributes, store_for_url
from shadow.calllog._records import CallRecord, MarkRecord
from shadow.cli import app


def _hex_ids(node: object) -> None:
    """protobuf's JSON mapping writes bytes as base64; OTLP JSON wants trace and span ids as hex."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str):
                node[k] = base64.b64decode(v).hex()
            else:
                _hex_ids(v)
    elif isinstance(node, list):
        for v in node:
            _hex_ids(v)


class Receiver:
    """An OTLP/HTTP trace receiver on loopback, keeping each request as an OTLP JSON document."""

    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []
        received = self.documents

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                elif self.headers.get("Content-Encoding") == "deflate":
                    body = zlib.decompress(body)
                if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_error(415)
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                doc = json.loads(json_format.MessageToJson(request))
                _hex_ids(doc)
                received.append(doc)
                out = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"otlp+http://127.0.0.1:{self.server.server_address[1]}"

    def spans(self) -> list[dict[str, Any]]:
        return [span for doc in self.documents for r in doc["resourceSpans"] for s in r["scopeSpans"]
                for span in s["spans"]]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    found.thread.start()
    yield found
    found.server.shutdown()
    found.server.server_close()


def _records(db: Path) -> list[CallRecord | MarkRecord]:
    """Every record of a call log, in session order (as a writer would have handed them over)."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    out: list[tuple[str, int, int, CallRecord | MarkRecord]] = []
    for row in con.execute("SELECT * FROM calls"):
        d = dict(row)
        d.pop("inserted_at")
        for name in ("arg_hashes", "args", "legacy_payload", "new_payload"):
            d[name] = json.loads(d[name]) if d[name] is not None else None
        for name in ("retryable", "unmapped", "schema_valid"):
            d[name] = bool(d[name]) if d[name] is not None else None
        d["ts"] = _when(d["ts"])
        out.append((d["session_id"], d["seq"], 0, CallRecord(**d)))
    for row in con.execute("SELECT * FROM marks"):
        d = dict(row)
        d.pop("inserted_at")
        d["ts"] = _when(d["ts"])
        out.append((d["session_id"], d["seq"], 1, MarkRecord(**d)))
    return [r for *_, r in sorted(out, key=lambda t: t[:3])]


def _when(text: str) -> Any:
    import datetime as dt

    found = dt.datetime.fromisoformat(text)
    return found if found.tzinfo else found.replace(tzinfo=dt.UTC)


def _arms(db: Path, tmp: Path, name: str) -> dict[str, tuple[int, int, int]]:
    with Warehouse.open(tmp / f"{name}.duckdb") as wh:
        wh.sync(f"sqlite:///{db}", rebuild=True)
        report = loop_rate_report(wh, resamples=10)
        return {v.variant: (v.calls, v.errors, v.loops) for v in report.variants}


_RECORDED = ("session_id", "tool", "mode", "variant", "outcome", "code", "retryable", "next_action", "retry_after_ms",
             "error_field", "rule", "unmapped", "schema_valid", "fingerprint", "arg_hashes")


def _calls(db: Path) -> list[tuple[Any, ...]]:
    """What the analytics read of each call, in session order."""
    con = sqlite3.connect(db)
    return con.execute(f"SELECT {', '.join(_RECORDED)} FROM calls ORDER BY session_id, ts, seq").fetchall()


def _followups(db: Path, tmp: Path, name: str) -> list[tuple[Any, ...]]:
    """What followed each error, as the loop-rate models compute it (the flag table and writer counters, which
    spans do not carry, left aside)."""
    with Warehouse.open(tmp / f"{name}-followups.duckdb") as wh:
        wh.sync(f"sqlite:///{db}", rebuild=True)
        return wh.con.execute(
            "SELECT session_id, tool, mode, variant, code, retryable, unmapped, follow_up, looped, back_to_back, "
            "loop_length, justified_retry, waited_retry_after, repair_field, repair_field_changed "
            "FROM error_followups ORDER BY session_id, ts, seq").fetchall()


@pytest.mark.parametrize("options", ["", "?arguments=1&payloads=1"], ids=["defaults", "arguments-and-payloads"])
def test_records_round_trip_through_an_otlp_receiver_and_shadow_import(receiver: Receiver, tmp_path: Path,
                                                                       options: str) -> None:
    """Imported back, the spans give the same calls, codes, loops and arms, with or without arguments exported."""
    from shadow.demo._run import run_demo

    run_demo(tmp_path / "demo", sessions=60, seed=3, dashboard=False)
    source = tmp_path / "demo" / "shadow.db"
    records = _records(source)
    store = OtlpStore.from_url(receiver.url + options, schedule_delay_millis=50)
    for start in range(0, len(records), 200):  # the writer's batches
        store.write(records[start:start + 200])
    assert store.flush(30)
    store.close()

    spans = receiver.spans()
    calls = [r for r in records if isinstance(r, CallRecord)]
    assert len([s for s in spans if s["name"].startswith("execute_tool ")]) == len(calls)
    first = next(s for s in spans if any(a["key"] == "error.type" for a in s["attributes"]))
    keys = {a["key"] for a in first["attributes"]}
    assert {"gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.conversation.id",
            "error.type", "shadow.mode", "shadow.variant", "shadow.code", "shadow.fingerprint",
            "shadow.unmapped", "shadow.next_action"} <= keys
    # arguments and payloads only when opted in
    assert ("gen_ai.tool.call.arguments" in keys) is bool(options)
    assert ("gen_ai.tool.call.result" in keys) is bool(options)
    assert first["status"]["code"] == "STATUS_CODE_ERROR"
    # every mark is an event: on the span of the call before it, or (first in a batch) on a shadow.mark span
    assert sum(len(s.get("events", [])) for s in spans) == sum(isinstance(r, MarkRecord) for r in records)

    export = tmp_path / "otlp.jsonl"
    export.write_text("".join(json.dumps(doc) + "\n" for doc in receiver.documents))
    imported = tmp_path / "imported.db"
    result = CliRunner().invoke(app, ["import", "--format", "otel", str(export), "--db-url", f"sqlite:///{imported}"])
    assert result.exit_code == 0, result.output
    assert "no recorded arguments" not in result.output  # shadow's spans carry the fingerprints
    assert _arms(imported, tmp_path, "imported") == _arms(source, tmp_path, "source")
    assert _calls(imported) == _calls(source)
    assert _followups(imported, tmp_path, "imported") == _followups(source, tmp_path, "source")
    con = sqlite3.connect(imported)
    assert con.execute("SELECT count(*) FROM marks").fetchone()[0] == sqlite3.connect(source).execute(
        "SELECT count(*) FROM marks WHERE kind IN ('user_turn', 'end')").fetchone()[0]


def test_otlp_urls_choose_the_store_and_bad_options_say_what_is_known() -> None:
    assert store_for_url("sqlite:///shadow.db") is None
    store = store_for_url("otlp+http://127.0.0.1:4318")
    assert store is not None
    assert store.endpoint == "http://127.0.0.1:4318/v1/traces"
    assert (store.arguments, store.payloads) == (False, False)
    store.close()
    with pytest.raises(ValueError, match="known: arguments, payloads"):
        OtlpStore.from_url("otlp+http://127.0.0.1:4318?secrets=1")


def test_payloads_are_opt_in_and_stored_redacted_values_go_out_as_they_are() -> None:
    import datetime as dt

    record = CallRecord(
        id="c1", session_id="s1", seq=1, ts=dt.datetime(2025, 3, 1, tzinfo=dt.UTC), tool="create_task",
        mode="shadow", variant="legacy", fingerprint="f", arg_hashes=None, args={"token": "[REDACTED]"},
        outcome="error", legacy_payload="Error: bad date", new_payload={"ok": False}, code="validation_error",
        retryable=False, next_action="fix_args", retry_after_ms=None, error_field="due", rule="r", unmapped=False,
        schema_valid=True, latency_us=10, process="p", host="h")
    plain = attributes(record)
    assert "gen_ai.tool.call.arguments" not in plain and "gen_ai.tool.call.result" not in plain
    assert (plain["error.type"], plain["shadow.retryable"], plain["shadow.next_action"]) == (
        "validation_error", False, "fix_args")
    full = attributes(record, arguments=True, payloads=True)
    assert json.loads(full["gen_ai.tool.call.arguments"]) == {"token": "[REDACTED]"}
    assert json.loads(full["gen_ai.tool.call.result"]) == "Error: bad date"  # what the legacy arm served


def test_an_active_application_span_gets_the_attributes_instead() -> None:
    import datetime as dt

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    record = CallRecord(
        id="c2", session_id="s2", seq=1, ts=dt.datetime(2025, 3, 1, tzinfo=dt.UTC), tool="search", mode="shadow",
        variant="legacy", fingerprint="f", arg_hashes=None, args=None, outcome="ok", legacy_payload=None,
        new_payload=None, code=None, retryable=None, next_action=None, retry_after_ms=None, error_field=None,
        rule=None, unmapped=False, schema_valid=True, latency_us=10, process="p", host="h")
    assert annotate_current_span(record) is False  # no active span: nothing to do
    with provider.get_tracer("app").start_as_current_span("execute_tool search"):
        assert annotate_current_span(record) is True
    (span,) = exported.get_finished_spans()
    assert span.attributes is not None
    assert span.attributes["gen_ai.tool.call.id"] == "c2"
    assert span.attributes["shadow.variant"] == "legacy"

    class Pending:  # what the adapter hands the writer: built on demand, with a fresh id each time
        built = 0

        def build(self) -> CallRecord:
            Pending.built += 1
            return dataclasses.replace(record, id=f"c2-{Pending.built}")

    pending = Pending()
    assert annotate_pending(pending) is pending and Pending.built == 0  # no span: left to the writer thread
    with provider.get_tracer("app").start_as_current_span("execute_tool search"):
        stored = annotate_pending(pending)
    assert isinstance(stored, CallRecord)
    assert exported.get_finished_spans()[-1].attributes["gen_ai.tool.call.id"] == stored.id  # type: ignore[index]


def test_shadow_db_url_naming_a_collector_sends_a_fresh_process_calls_as_spans(receiver: Receiver,
                                                                                tmp_path: Path) -> None:
    script = (
        "import shadow\n"
        "@shadow.tool(name='lookup')\n"
        "def lookup(key: str) -> dict:\n"
        "    if key == 'x':\n"
        "        raise KeyError(key)\n"
        "    return {'key': key}\n"
        "for k in ('a', 'x', 'x'):\n"
        "    try:\n"
        "        lookup(k)\n"
        "    except KeyError:\n"
        "        pass\n"
        "shadow.flush()\n"
    )
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")},
           "SHADOW_DB_URL": receiver.url, "SHADOW_FLAGS": "lookup=shadow", "SHADOW_SPOOL": str(tmp_path / "spool"),
           "SHADOW_FINGERPRINT_KEY": "test-key", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120,
                          check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    deadline = time.monotonic() + 30
    while len(receiver.spans()) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    spans = receiver.spans()
    assert len(spans) == 3
    names = {a["key"]: a["value"] for s in spans for a in s["attributes"]}
    assert names["gen_ai.tool.name"] == {"stringValue": "lookup"}
    assert not (tmp_path / "shadow.db").exists()  # nothing went to a database


#: A script's start: the application's own tracing (in memory, printed at the end) and shadow's OTLP store.
_APP_PREAMBLE = """
import json, sys, shadow
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from shadow.calllog import OtlpStore
from shadow.testing import InMemoryFlags

app_spans = InMemorySpanExporter()  # the application's own tracing
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(app_spans))
trace.set_tracer_provider(provider)
tracer = trace.get_tracer("app")
store = OtlpStore.from_url(sys.argv[1], schedule_delay_millis=50)
shadow.configure(store=store)

"""

_APP_SPANS = _APP_PREAMBLE + """
@shadow.tool(name="lookup", flags=InMemoryFlags({"lookup": "shadow"}))
def lookup(key: str) -> dict:
    if key == "missing":
        raise KeyError(key)
    return {"key": key}

with tracer.start_as_current_span("execute_tool lookup"):
    lookup("a")
with tracer.start_as_current_span("execute_tool lookup"):
    try:
        lookup("missing")
    except KeyError:
        pass
lookup("outside")  # no application span: shadow's own execute_tool span
shadow.flush(10)
store.flush(10)
print(json.dumps([{"name": s.name, "attributes": dict(s.attributes), "status": s.status.status_code.name}
                  for s in app_spans.get_finished_spans()]))
"""


def test_an_application_span_around_the_call_takes_the_attributes_and_no_span_of_its_own_is_exported(
        receiver: Receiver, tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")},
           "SHADOW_SPOOL": str(tmp_path / "spool"), "SHADOW_FINGERPRINT_KEY": "test-key",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", _APP_SPANS, receiver.url], env=env, capture_output=True, text=True,
                          timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    app_spans = json.loads(done.stdout)
    assert [s["name"] for s in app_spans] == ["execute_tool lookup"] * 2
    ok, error = (s["attributes"] for s in app_spans)
    for attrs in (ok, error):
        assert attrs["gen_ai.operation.name"] == "execute_tool"
        assert attrs["gen_ai.tool.name"] == "lookup"
        assert (attrs["shadow.mode"], attrs["shadow.variant"]) == ("shadow", "legacy")
        assert "shadow.fingerprint" in attrs and "gen_ai.conversation.id" in attrs
    assert ok["shadow.outcome"] == "ok" and "error.type" not in ok
    assert error["error.type"] == error["shadow.code"] and error["shadow.outcome"] == "error"
    assert [s["status"] for s in app_spans] == ["UNSET", "ERROR"]

    deadline = time.monotonic() + 10
    while not receiver.spans() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # anything else the store would have sent
    exported = receiver.spans()
    assert [s["name"] for s in exported] == ["execute_tool lookup"]  # only the call made outside any span
    (attrs,) = ({a["key"]: a["value"] for a in s["attributes"]} for s in exported)
    assert attrs["shadow.seq"] == {"intValue": "3"}
    assert attrs["gen_ai.tool.call.id"]["stringValue"] not in {ok["gen_ai.tool.call.id"], error["gen_ai.tool.call.id"]}


def test_annotated_calls_are_stored_by_other_stores_and_the_last_closed_otlp_store_turns_annotation_off() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    import shadow
    from shadow.calllog import _otel
    from shadow.calllog._otel import AnnotatedCall, annotate_spans
    from shadow.testing import InMemoryFlags, recording

    first = OtlpStore.from_url("otlp+http://127.0.0.1:9/v1/traces")
    second = OtlpStore.from_url("otlp+http://127.0.0.1:9/v1/traces")
    assert _otel.CALL_HOOK is not None
    first.close()
    assert _otel.CALL_HOOK is not None  # the second store is still open
    second.close()
    assert _otel.CALL_HOOK is None

    @shadow.tool(name="search", flags=InMemoryFlags({"search": "shadow"}))
    def search(q: str) -> list[str]:
        return [q]

    tracer = TracerProvider().get_tracer("app")
    annotate_spans()
    try:
        with recording() as store:
            with tracer.start_as_current_span("execute_tool search") as span:
                search("inside")
            search("outside")
    finally:
        annotate_spans(False)
    inside, outside = sorted(store.records.values(), key=lambda r: r.seq)  # type: ignore[attr-defined]
    assert isinstance(inside, AnnotatedCall) and not isinstance(outside, AnnotatedCall)
    assert span.attributes is not None and span.attributes["gen_ai.tool.call.id"] == inside.id
    assert isinstance(inside, CallRecord) and inside.args == {"q": "inside"}


_REQUEST_SPAN = _APP_PREAMBLE + """
@shadow.tool(name="lookup", flags=InMemoryFlags({"lookup": "shadow"}))
def lookup(key: str) -> str:
    return "Error: not found" if key == "x" else key

with shadow.session("s-req"), tracer.start_as_current_span("POST /agent/run"):  # a request around several calls
    lookup("x")
    lookup("x")  # the same call again: a loop
    with tracer.start_as_current_span("execute_tool lookup", attributes={"gen_ai.tool.name": "lookup"}):
        lookup("42")
        lookup("43")  # a second call inside the one tool span: a span of its own
print(json.dumps([{"name": s.name, "attributes": dict(s.attributes)} for s in app_spans.get_finished_spans()]))
"""


def test_a_request_span_around_several_calls_is_left_alone_and_each_call_is_exported(
        receiver: Receiver, tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")},
           "SHADOW_SPOOL": str(tmp_path / "spool"), "SHADOW_FINGERPRINT_KEY": "test-key",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", _REQUEST_SPAN, receiver.url], env=env, capture_output=True,
                          text=True, timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    by_name = {s["name"]: s["attributes"] for s in json.loads(done.stdout)}
    assert not any(k.startswith(("shadow.", "gen_ai.tool.call")) for k in by_name["POST /agent/run"])
    assert by_name["execute_tool lookup"]["shadow.seq"] == 3  # the tool's own span took its first call only

    deadline = time.monotonic() + 10
    while len(receiver.spans()) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    exported = [{a["key"]: a["value"] for a in s["attributes"]} for s in receiver.spans()]
    seqs = sorted(int(a["shadow.seq"]["intValue"]) for a in exported)
    assert seqs == [1, 2, 4]
    first, second = sorted((a for a in exported if a["shadow.seq"]["intValue"] in ("1", "2")),
                           key=lambda a: a["shadow.seq"]["intValue"])
    assert first["shadow.outcome"]["stringValue"] == "error" and second["shadow.outcome"]["stringValue"] == "error"
    assert first["shadow.fingerprint"] == second["shadow.fingerprint"]  # the loop is there to see
