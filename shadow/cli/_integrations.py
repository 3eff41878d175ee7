"""``shadow proxy`` (an MCP server behind the flag) and ``shadow import`` (agent transcripts into the call log)."""

from __future__ import annotations

import json
import re
import signal
import sys
from enum import StrEnum
from pathlib import Path
from types import FrameType, ModuleType
from typing import Annotated, Any, Literal, NoReturn

import typer

from shadow._config import configure, settings
from shadow.cli._app import ExitCode, app, fail, install_line, need_extra
from shadow.cli._loader import import_user_module
from shadow.cli._options import (
    FORMAT_HELP,
    FORMAT_METAVAR,
    DbAliasOption,
    DbUrlOption,
    Format,
    store_unreachable,
    store_url,
)
from shadow.contract._rules import Rules
from shadow.flags._db import Variant
from shadow.transcripts._formats import FormatError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
#: ``shadow import`` shows its progress bar for inputs this big or bigger.
_BAR_BYTES = 16 * 1024 * 1024


class InputFormat(StrEnum):
    """Transcript formats ``shadow import`` reads."""

    openai = "openai"
    anthropic = "anthropic"
    otel = "otel"


class ArmChoice(StrEnum):
    """What the model was served in the imported traffic."""

    legacy = "legacy"
    structured = "structured"


RulesOption = Annotated[str | None, typer.Option(
    "--rules", help="Your rules, tried before the built-in ones: a module (dotted name or .py file) defining "
                    "RULES (a shadow.Rules), or MODULE:NAME.")]


def _import_module(ref: str) -> ModuleType:
    try:
        return import_user_module(ref, prefix="_shadow_rules")
    except ValueError as exc:
        raise ValueError(f"--rules: {exc}") from None


def load_rules(ref: str) -> Rules:
    """The ``shadow.Rules`` named by ``--rules``: ``MODULE`` (its ``RULES``) or ``MODULE:NAME``; a function
    returning Rules is called. Raises ``ValueError`` saying what to fix."""
    module_ref, _, attr = ref.rpartition(":") if re.search(r":[A-Za-z_]\w*$", ref) else (ref, "", "")
    module = _import_module(module_ref)
    name = attr or "RULES"
    found: Any = getattr(module, name, None)
    if found is None and not attr:
        found = getattr(module, "rules", None)
    if callable(found) and not isinstance(found, Rules):
        found = found()
    if found is None:
        raise ValueError(f"--rules: {module_ref} defines no {name}; add for example "
                         "RULES = shadow.Rules.default().on_result('quota', 'quota_exceeded'), or pass MODULE:NAME")
    if not isinstance(found, Rules):
        raise ValueError(f"--rules: {module_ref}.{name} is a {type(found).__name__}, not a shadow.Rules")
    return found


def _rules_or_fail(ref: str | None) -> Rules | None:
    if ref is None:
        return None
    try:
        return load_rules(ref)
    except ValueError as exc:
        fail(str(exc))


def rules_in_force(ref: str | None) -> tuple[Rules | None, str]:
    """The rules to judge the logged errors with, and their name for the output: ``--rules``, else the configured
    ones (``SHADOW_RULES``), else none: the errors count as classified when logged (``"as logged"``)."""
    if ref is not None:
        return _rules_or_fail(ref), f"--rules {ref}"
    configured = settings().rules
    if not configured:
        return None, "as logged"
    try:
        return load_rules(configured), f"SHADOW_RULES={configured}"
    except ValueError as exc:
        fail(f"SHADOW_RULES{str(exc).removeprefix('--rules')} (or pass --rules MODULE)")


def _exit_on_sigterm(_signum: int, _frame: FrameType | None) -> NoReturn:
    raise SystemExit(128 + signal.SIGTERM)  # runs the writer's exit flush


class ProxyParagraph(StrEnum):
    """``shadow proxy --paragraph``: what a cutover tool's description ends with."""

    brief = "brief"
    full = "full"
    none = "none"


@app.command(context_settings={"allow_interspersed_args": False})
def proxy(
    command: Annotated[list[str], typer.Argument(
        help="The stdio MCP server to start, after `--`.", metavar="-- COMMAND [ARGS]...", show_default=False)],
    name: Annotated[str, typer.Option("--name", help="The server's name: shown to the client, and part of the "
                                                     "session ids in the call log.")],
    rules: RulesOption = None,
    timeout: Annotated[float, typer.Option(
        "--timeout", min=0.01, help="Seconds a call served in cutover may take before it is answered as "
                                    "upstream_timeout (and tools/list may take). Legacy and shadow calls wait as long "
                                    "as the server takes, as with a direct connection.")] = 60.0,
    start_timeout: Annotated[float, typer.Option(
        "--start-timeout", min=0.01, help="Seconds the server may take to start and finish the MCP handshake.")]
    = 30.0,
    paragraph: Annotated[ProxyParagraph, typer.Option(
        "--paragraph", help="What a cutover tool's description ends with: the codes paragraph in brief (about 700 "
                            "characters), in full (shadow describe, about 2,000), or none (when your system "
                            "prompt carries it). Every tool's description is sent with every request.")]
    = ProxyParagraph.brief,
    db_url: DbUrlOption = None,
    db_alias: DbAliasOption = None,
) -> None:
    """Serve a stdio MCP server's tools through shadow's flags, logging every call.

    Put this command where the agent's MCP client config starts the server. Per tool the flag decides: legacy
    (passed through, not logged), shadow (the child's result unchanged; the structured payload logged) or cutover
    (the structured payload as JSON text and structured content; the tool description carries the codes
    paragraph; --timeout bounds these calls only). A child that crashes is restarted on the next call.

    Example: shadow proxy --name files --timeout 30 -- python -m my_mcp_server --root ./docs
    """
    need_extra("mcp")
    try:
        import anyio

        from shadow.proxy._server import ProxyStartError, serve
    except ImportError as exc:
        fail(f"this command needs the 'mcp' extra ({exc}): {install_line('mcp')}")

    if not _NAME.match(name):
        fail(f"--name {name!r}: use 1 to 100 letters, digits, '.', '_' or '-', for example --name files")
    if not command:
        fail("no MCP server command; put it after `--`, for example: shadow proxy --name files -- python server.py")
    loaded = _rules_or_fail(rules)
    configure(db_url=store_url(db_url, db_alias))  # the flags and the call log of this process
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        anyio.run(lambda: serve(command, name=name, rules=loaded, timeout=timeout, start_timeout=start_timeout,
                                paragraph=paragraph.value))
    except ProxyStartError as exc:
        text = str(exc)
        bad_command = "was not found" in text or "is not executable" in text
        fail(text, ExitCode.USAGE if bad_command else ExitCode.UNAVAILABLE)
    except KeyboardInterrupt:
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None


def _import_formats(source: InputFormat | None, fmt: str | None,
                    alias: Format | None) -> tuple[InputFormat, Format]:
    """The transcripts' format and the output format; 0.1's ``--format openai`` still names the transcripts'."""
    value = (fmt or "").lower()
    if value in set(InputFormat):
        if source is not None and source.value != value:
            fail(f"--input-format {source.value} and --format {value} disagree; keep --input-format")
        typer.echo(f"shadow: note: --format now names the output format; write --input-format {value}", err=True)
        return InputFormat(value), alias or Format.table
    output = Format(value) if value in {"table", "text", "json"} else None
    if fmt is not None and output is None:
        fail(f"--format {fmt!r}: use table or json (the transcripts' format goes in --input-format: openai, "
             "anthropic or otel)")
    if source is None:
        fail("shadow import needs the transcripts' format: --input-format openai, anthropic or otel; for example "
             "shadow import chats.jsonl --input-format openai")
    return source, output or alias or Format.table


@app.command("import")
def import_command(
    files: Annotated[list[Path], typer.Argument(help="Transcript files: JSON, JSON lines, or OTel exports.",
                                                show_default=False)],
    input_format: Annotated[InputFormat | None, typer.Option(
        "--input-format", help="The transcripts' format: openai, anthropic or otel.", case_sensitive=False,
        show_default=False)] = None,
    variant: Annotated[ArmChoice, typer.Option(
        "--variant", help="What the model was served: legacy payloads (today's traffic) or structured ones.")]
    = ArmChoice.legacy,
    messages_key: Annotated[str | None, typer.Option(
        "--messages-key", help="Key (dotted for nested) holding each record's message list, when not one of "
                               "messages, conversation, chat, body.messages, request.messages, params.messages.")]
    = None,
    id_key: Annotated[str | None, typer.Option(
        "--id-key", help="Key (dotted for nested) holding each record's conversation id, when not one of "
                         "conversation_id, session_id, thread_id, custom_id, id; several keys combine "
                         "(--id-key task_id,trial).")] = None,
    result_key: Annotated[str | None, typer.Option(
        "--result-key", help="Key of a tool result that names its call, when not tool_call_id or tool_call_ids "
                             "(OpenAI) or tool_use_id (Anthropic); an id or a list of ids.")] = None,
    rules: RulesOption = None,
    db_url: DbUrlOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Read and count, write nothing.")] = False,
    max_file_mb: Annotated[int, typer.Option(
        "--max-file-mb", min=1, help="The most a file read whole may hold, in MiB: one JSON document, an OTel "
                                     "export, or a pipe; a bigger one (or an endless one) is refused once that much "
                                     "is read. JSON lines files have no size bound.")] = 256,
    max_line_mb: Annotated[int, typer.Option(
        "--max-line-mb", min=1, help="The most one line of a JSON lines file may hold, in MiB.")] = 64,
    fmt: Annotated[str | None, typer.Option(
        "--format", "-f", metavar=FORMAT_METAVAR, show_default=False,
        help=f"{FORMAT_HELP} or json.  [default: table]")] = None,
    output_alias: Annotated[Literal[Format.table, Format.text, Format.json] | None, typer.Option(
        "--output", "-o", hidden=True)] = None,
    db_alias: DbAliasOption = None,
) -> None:
    """Read agent transcripts into the call log, so the loop rate of today's traffic can be measured.

    Tool results count as errors by the format's explicit flag (Anthropic is_error, an OTel error status or
    error.type), else by the same result rules the adapter uses. User turns between calls become marks, and a
    final answer an end mark. Malformed records are reported and skipped. Importing a file again adds nothing.

    JSON lines are read a line at a time and written in batches as they are read, so memory stays flat however
    long the file. Every file is checked first (bounds, UTF-8, and with --id-key that no id names two
    conversations): a file that fails stops the import before anything is written. A pipe is copied to a
    temporary file first, up to --max-file-mb.

    Example: shadow import chats.jsonl --input-format openai --id-key thread.id --db-url sqlite:///shadow.db
    """
    from sqlalchemy.exc import SQLAlchemyError

    from shadow.calllog._store import StoreUnavailable
    from shadow.transcripts._importer import ImportOptions, scanned, write

    source, output = _import_formats(input_format, fmt, output_alias)
    url = store_url(db_url, db_alias)
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        fail(f"no such file: {', '.join(missing)}; check the paths")
    options = ImportOptions(source.value, Variant(variant.value), messages_key or None, id_key or None,
                            _rules_or_fail(rules), result_key or None, max_file_mb * 1024 * 1024,
                            max_line_mb * 1024 * 1024)
    try:
        with scanned(files, options) as sources:
            total = sum(source.size for source in sources)  # bytes: the bar moves as they are read
            with typer.progressbar(length=total, label="importing", file=sys.stderr,
                                   hidden=total < _BAR_BYTES) as bar:
                summary = write(sources, url, options, dry_run=dry_run, progress=bar.update)
    except FormatError as exc:
        fail(str(exc))
    except ValueError as exc:
        fail(str(exc))
    except (StoreUnavailable, SQLAlchemyError) as exc:
        store_unreachable(url, exc)
    if output is Format.json:
        typer.echo(json.dumps({**summary.to_json(), "dry_run": dry_run}, indent=2))
        return
    for problem in summary.problems:
        typer.echo(f"{problem.where}: {problem.message}", err=True)
    if summary.unlisted:
        typer.echo(f"... and {summary.unlisted} more skipped records, not listed", err=True)
    verb = "would write" if dry_run else "wrote"
    typer.echo(
        f"{summary.files} file(s): {summary.conversations} conversations, {summary.calls} calls, "
        f"{summary.errors} errors, {summary.user_turns} user turns, {summary.ends} ends, "
        f"{summary.skipped} skipped; {verb} {summary.written} new records"
        + (f" ({summary.already_present} already imported)" if summary.already_present else "")
    )
    if summary.synthetic_times:
        typer.echo(f"note: {summary.synthetic_times} of {summary.calls} calls carry no time in the data; their times "
                   "are synthetic (the file's modification time, in order), so --since, per-day rows and savings "
                   "do not say when they happened", err=True)
    if summary.unrecorded_arguments:
        typer.echo(f"note: {summary.unrecorded_arguments} calls had no recorded arguments "
                   "(gen_ai.tool.call.arguments is opt-in); they never count as repeats", err=True)
