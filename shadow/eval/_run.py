"""Behavioural evaluation: does the model do what an error payload's ``next_action`` says?

``build_examples`` (shadow.eval_examples) gives ten agent turns per code; ``ask`` sends each to a chat completions
endpoint (shadow.eval_client) and keeps every exchange; ``judge`` classifies the reply (shadow.eval_classify);
``evaluate`` turns judgements into a per-code report. ``save``/``load`` store exchanges one file per example so that
a run can be replayed without a network and reviewed like a snapshot. The legacy arm sends the same turns with the
legacy payloads of the shadow log and the tool's plain description, to show what the contract changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from shadow._redact import JSONValue
from shadow.contract._codes import CODE_TABLE, Code, NextAction
from shadow.eval._classify import Action, Verdict, agrees, classify
from shadow.eval._client import Endpoint, EndpointError, HttpChatClient, Reply
from shadow.eval._examples import Example, ToolSpec, UserModule, UserTool, build_examples, load_user_module
from shadow.eval._legacy import StoreError, legacy_payloads
from shadow.eval._report import (
    ARMS,
    DEFAULT_THRESHOLD,
    LEGACY,
    STRUCTURED,
    ArmReport,
    CodeRow,
    Comparison,
    EvalReport,
    Judgement,
    render_table,
    summarise,
)
from shadow.typing import ChatClient

__all__ = [
    "ARMS", "DEFAULT_THRESHOLD", "LEGACY", "STRUCTURED", "Action", "ArmReport", "ChatClient", "CodeRow", "Comparison",
    "Endpoint",
    "EndpointError", "EvalInputError", "EvalReport", "Example", "Exchange", "HttpChatClient", "Judgement", "Reply",
    "StoreError", "ToolSpec", "UserModule", "UserTool", "Verdict", "agrees", "ask", "build_examples", "classify",
    "evaluate", "judge", "legacy_payloads", "load", "load_user_module", "plan", "render_table", "save",
    "summarise",
]

EXCHANGE_FORMAT: Final = "shadow-eval-exchange/1"
_FILE_NAME: Final = re.compile(r"^(structured|legacy)-([a-z_]+)-(\d{2})\.json$")


class EvalInputError(ValueError):
    """A recording or an option cannot be used; the message says how to fix it."""


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request sent and the reply received, with what the classifier needs to judge it."""

    arm: str
    code: Code
    index: int
    expected: NextAction
    tool: str
    arguments: Mapping[str, JSONValue]
    request: Mapping[str, Any]
    status: int
    body: str

    @property
    def example_id(self) -> str:
        """The example's stable id, for example ``not_found-03``."""
        return f"{self.code.value}-{self.index:02d}"

    @property
    def file_name(self) -> str:
        """The stable file name of this exchange in a recording."""
        return f"{self.arm}-{self.example_id}.json"

    def to_record(self) -> dict[str, Any]:
        """The exchange as stored: the response body as JSON when it parses, else as text."""
        response: dict[str, Any] = {"status": self.status}
        try:
            response["json"] = json.loads(self.body)
        except ValueError:
            response["text"] = self.body
        return {
            "format": EXCHANGE_FORMAT,
            "arm": self.arm,
            "example": self.example_id,
            "code": self.code.value,
            "expected": self.expected.value,
            "call": {"name": self.tool, "arguments": dict(self.arguments)},
            "request": dict(self.request),
            "response": response,
        }

    @classmethod
    def from_record(cls, data: object, where: str = "exchange") -> Exchange:
        """Read a stored exchange; raise ``EvalInputError`` naming what is missing."""
        try:
            if not isinstance(data, dict) or data.get("format") != EXCHANGE_FORMAT:
                raise EvalInputError(f"{where} is not a {EXCHANGE_FORMAT} record")
            code = Code(data["code"])
            index = int(str(data["example"]).rsplit("-", 1)[1])
            response = data["response"]
            body = json.dumps(response["json"]) if "json" in response else str(response["text"])
            arguments = data["call"]["arguments"]
            if data["arm"] not in ARMS or not isinstance(arguments, dict):
                raise EvalInputError(f"{where}: arm must be one of {ARMS} and call.arguments an object")
            return cls(data["arm"], code, index, NextAction(data["expected"]), str(data["call"]["name"]),
                       arguments, data["request"], int(response["status"]), body)
        except EvalInputError:
            raise
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise EvalInputError(f"{where} is not a readable exchange ({type(exc).__name__}: {exc}); "
                                 "record it again with --record") from None


# ---------------------------------------------------------------- asking the model


@dataclass(frozen=True, slots=True)
class _Job:
    example: Example
    arm: str
    legacy_payload: JSONValue | None


def plan(
    examples: Sequence[Example], legacy: Mapping[Code, Sequence[JSONValue]] | None = None
) -> list[_Job]:
    """The requests to send: every example with its structured payload, then (when given) with legacy payloads.

    Example ``i`` of a code takes the code's legacy payload ``i`` (cycling when the log holds fewer); a code with no
    logged legacy payload has no legacy request.
    """
    jobs = [_Job(e, STRUCTURED, None) for e in examples]
    if legacy is not None:
        for e in examples:
            payloads = legacy.get(e.code) or ()
            if payloads:
                jobs.append(_Job(e, LEGACY, payloads[(e.index - 1) % len(payloads)]))
    return jobs


def ask(
    examples: Sequence[Example],
    client: ChatClient,
    model: str,
    *,
    legacy: Mapping[Code, Sequence[JSONValue]] | None = None,
    concurrency: int = 2,
    on_done: Callable[[Exchange], None] | None = None,
) -> list[Exchange]:
    """Send every planned request (``concurrency`` at a time) and return the exchanges in a stable order.

    The first ``EndpointError`` stops the run: results of a half-broken endpoint would mislead.
    """
    jobs = plan(examples, legacy)

    def one(job: _Job) -> Exchange:
        body = job.example.request_body(model, legacy_payload=job.legacy_payload)
        reply = client.complete(body)
        e = job.example
        return Exchange(job.arm, e.code, e.index, e.expected, e.tool.name, e.arguments, body, reply.status,
                        reply.body)

    results: list[Exchange] = []
    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="shadow-eval") as pool:
        pending: set[Future[Exchange]] = {pool.submit(one, job) for job in jobs}
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for future in done:
                failure = future.exception()
                if failure is not None:
                    for other in pending:
                        other.cancel()
                    raise failure
                results.append(future.result())
                if on_done is not None:
                    on_done(future.result())
    return sort_exchanges(results)


def sort_exchanges(exchanges: Iterable[Exchange]) -> list[Exchange]:
    """Arm, then code-table order, then example number."""
    order = {code: n for n, code in enumerate(CODE_TABLE)}
    return sorted(exchanges, key=lambda x: (ARMS.index(x.arm), order[x.code], x.index))


# ---------------------------------------------------------------- judging and reporting


def judge(exchange: Exchange) -> Judgement:
    """Classify one exchange's reply against the call it answered."""
    verdict = classify(exchange.body, exchange.tool, exchange.arguments)
    return Judgement(exchange.arm, exchange.example_id, exchange.code, exchange.expected, verdict.action,
                     verdict.reason)


def evaluate(
    exchanges: Iterable[Exchange],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    model: str | None = None,
    source: str = "live",
) -> EvalReport:
    """Judge every exchange and summarise per arm and code (``model`` defaults to the one the requests name)."""
    ordered = sort_exchanges(exchanges)
    return summarise(map(judge, ordered), threshold=threshold, model=model or model_of(ordered), source=source)


def model_of(exchanges: Iterable[Exchange]) -> str | None:
    """The model named in the recorded requests (the first one), if any."""
    for x in exchanges:
        name = x.request.get("model")
        if isinstance(name, str):
            return name
    return None


# ---------------------------------------------------------------- recording and replay


def save(exchanges: Iterable[Exchange], directory: Path) -> list[Path]:
    """Write one file per exchange under stable names, replacing the exchanges an earlier run recorded there."""
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        if _FILE_NAME.match(old.name) and old.is_file():
            old.unlink()
    written = []
    for x in exchanges:
        path = directory / x.file_name
        path.write_text(json.dumps(x.to_record(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(path)
    return written


def load(directory: Path) -> list[Exchange]:
    """Read a recording made with ``save``; raise ``EvalInputError`` when there is none or a file is broken."""
    if not directory.is_dir():
        raise EvalInputError(f"--replay {directory}: no such directory; record one first with --record {directory}")
    exchanges = []
    for path in sorted(directory.iterdir()):
        if not _FILE_NAME.match(path.name):
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EvalInputError(f"{path} cannot be read as JSON ({exc}); record it again with --record") from None
        exchange = Exchange.from_record(data, where=str(path))
        if exchange.file_name != path.name:
            raise EvalInputError(f"{path} holds {exchange.file_name}; keep the names --record gave the files")
        exchanges.append(exchange)
    if not exchanges:
        raise EvalInputError(
            f"--replay {directory}: no recorded exchanges (files like structured-validation_error-01.json); "
            f"record some first with --record {directory}"
        )
    return sort_exchanges(exchanges)


