"""``shadow eval``: does a model do what each code's next_action says? A gate for CI."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from shadow._redact import JSONValue
from shadow.cli._app import ExitCode, app, fail
from shadow.cli._options import DbAliasOption, DbUrlOption, Format, FormatOption, store_url
from shadow.contract._codes import Code
from shadow.eval._run import (
    DEFAULT_THRESHOLD,
    Endpoint,
    EndpointError,
    EvalInputError,
    EvalReport,
    Example,
    Exchange,
    HttpChatClient,
    StoreError,
    ask,
    build_examples,
    evaluate,
    legacy_payloads,
    load,
    load_user_module,
    render_table,
    save,
)


@app.command("eval")
def eval_command(
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="Root of an OpenAI-compatible API, for example https://api.openai.com/v1.")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name the endpoint knows.")] = None,
    api_key_env: Annotated[str, typer.Option(
        "--api-key-env", help="Environment variable holding the API key (never printed or recorded).")]
    = "OPENAI_API_KEY",
    record: Annotated[Path | None, typer.Option(
        "--record", file_okay=False, help="Store every exchange here, one JSON file per example.")] = None,
    replay: Annotated[Path | None, typer.Option(
        "--replay", file_okay=False, help="Classify the exchanges stored here; sends nothing.")] = None,
    threshold: Annotated[float, typer.Option(
        "--threshold", min=0.0, max=1.0, help="Codes agreeing less often than this share are ambiguous.")]
    = DEFAULT_THRESHOLD,
    rules: Annotated[str | None, typer.Option(
        "--rules", help="Module (dotted name or .py file) with RULES (shadow.Rules) and/or TOOLS for the examples.")]
    = None,
    legacy_from_store: Annotated[bool, typer.Option(
        "--legacy-from-store", help="Also send the same turns with legacy payloads from the shadow log.")] = False,
    db_url: DbUrlOption = None,
    fmt: FormatOption = Format.table,
    timeout: Annotated[float, typer.Option("--timeout", min=0.1, help="Seconds to wait for each reply.")] = 60.0,
    concurrency: Annotated[int, typer.Option(
        "--concurrency", min=1, max=32, help="Requests in flight at once.")] = 2,
    db_alias: DbAliasOption = None,
) -> None:
    """Send ten example errors per code to a model and check it does what next_action says.

    With --legacy-from-store, --db-url names the shadow log the legacy payloads come from.
    Exits 1 when any code is ambiguous (agreement below --threshold), so it can gate CI.

    Example: OPENAI_API_KEY=... shadow eval --base-url https://api.openai.com/v1 --model gpt-4o-mini --record evals/
    """
    db_url = db_url or db_alias
    if replay is not None:
        conflicting = [name for name, value in (("--base-url", base_url), ("--model", model), ("--record", record),
                                                ("--rules", rules), ("--db-url", db_url)) if value is not None]
        if legacy_from_store:
            conflicting.append("--legacy-from-store")
        if conflicting:
            fail(f"--replay classifies recorded exchanges and sends nothing; drop {', '.join(conflicting)}")
        try:
            exchanges = load(replay)
            report = evaluate(exchanges, threshold=threshold, source="replay")
        except EvalInputError as exc:
            fail(str(exc))
        _finish(report, fmt)
        return
    if not base_url or not model:
        missing = " and ".join(n for n, v in (("--base-url URL", base_url), ("--model NAME", model)) if not v)
        fail(f"shadow eval sends its examples to a model, so it needs {missing}; for example --base-url "
             "https://api.openai.com/v1 --model gpt-4o-mini (or --replay DIR to classify a recording)")
    if db_url is not None and not legacy_from_store:
        fail("--db-url is read only with --legacy-from-store; add it or drop --db-url")
    try:
        endpoint = Endpoint(base_url, os.environ.get(api_key_env) or None, api_key_env=api_key_env, timeout=timeout)
        user = load_user_module(rules) if rules else None
        examples = build_examples(user.rules if user else None, user.tools if user else ())
    except ValueError as exc:
        fail(str(exc))
    legacy: dict[Code, list[JSONValue]] | None = None
    if legacy_from_store:
        try:
            legacy = legacy_payloads(store_url(db_url), dict.fromkeys(e.code for e in examples))
        except StoreError as exc:
            fail(str(exc), ExitCode.UNAVAILABLE if exc.unavailable else ExitCode.USAGE)
        if not any(legacy.values()):
            fail("the shadow log holds no legacy error payloads yet; run the shadow phase first, or drop "
                 "--legacy-from-store")
    total = len(examples) + sum(1 for e in examples if legacy and legacy.get(e.code))
    exchanges = _ask(examples, HttpChatClient(endpoint), model, legacy, concurrency, total)
    if record is not None:
        try:
            save(exchanges, record)
        except OSError as exc:
            fail(f"cannot write the recording to {record} ({exc}); pick a writable directory")
    _finish(evaluate(exchanges, threshold=threshold, model=model, source="live"), fmt)


def _ask(examples: Sequence[Example], client: HttpChatClient, model: str,
         legacy: dict[Code, list[JSONValue]] | None, concurrency: int, total: int) -> list[Exchange]:
    with typer.progressbar(length=total, label="asking the model", file=sys.stderr) as bar:
        try:
            return ask(examples, client, model, legacy=legacy, concurrency=concurrency,
                       on_done=lambda _x: bar.update(1))
        except EndpointError as exc:
            fail(str(exc), ExitCode.UNAVAILABLE if exc.unavailable else ExitCode.USAGE)


def _finish(report: EvalReport, fmt: Format) -> None:
    if fmt is Format.json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        typer.echo(render_table(report), nl=False)
    if report.ambiguous:
        raise typer.Exit(int(ExitCode.FAILED))
