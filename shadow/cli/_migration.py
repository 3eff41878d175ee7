"""Migration commands: ``shadow inventory`` (step 1) and ``shadow ready`` (the cutover gate of step 3)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from shadow.analytics._thresholds import Thresholds
from shadow.cli._app import ExitCode, app, fail
from shadow.cli._integrations import RulesOption, rules_in_force
from shadow.cli._options import (
    DbAliasOption,
    DbUrlOption,
    Format,
    FormatOption,
    require_call_log,
    store_unreachable,
    store_url,
    time_option,
)
from shadow.inventory._run import Inventory, emit_rules, format_table, inventory, python_files

if TYPE_CHECKING:
    from shadow.analytics._ready import Readiness

_DEFAULT = Thresholds()


@app.command("inventory")
def inventory_command(
    paths: Annotated[list[Path], typer.Argument(help="Source directories or .py files of the tool layer.")],
    select: Annotated[list[str] | None, typer.Option(
        "--select", "-s", help="Also treat as tools the functions of a module, or functions named by a glob "
        "(module.function, Class.method); repeatable.")] = None,
    fmt: FormatOption = Format.table,
    emit: Annotated[Path | None, typer.Option(
        "--emit-rules", help="Write a Python module defining RULES, a shadow.Rules draft with one rule per site.")]
    = None,
) -> None:
    """List every error a tool layer can return, without running it, with a proposed code for each.

    Example: shadow inventory src/tools --emit-rules tool_rules.py
    """
    try:
        files = python_files(paths)
    except ValueError as exc:
        fail(str(exc))
    if not files:
        fail(f"no .py files under {', '.join(map(str, paths))}; pass the directory that holds the tools")
    if emit is not None and emit.suffix != ".py":
        fail(f"--emit-rules needs a .py file name that can be imported, for example tool_rules.py (not {emit})")
    if sys.stderr.isatty() and len(files) > 20:
        with typer.progressbar(length=len(files), label="reading", file=sys.stderr) as bar:
            found = inventory(files, select=select or (), on_file=lambda _path: bar.update(1))
    else:
        found = inventory(files, select=select or ())
    if emit is not None:
        _write_rules(emit, found, [str(p) for p in paths])
    if fmt is Format.json:
        typer.echo(json.dumps(found.to_dict(), indent=2, ensure_ascii=False))
    else:
        typer.echo(format_table(found))


def _write_rules(target: Path, found: Inventory, sources: list[str]) -> None:
    try:
        target.write_text(emit_rules(found, sources), encoding="utf-8")
    except OSError as exc:
        fail(f"could not write {target} ({exc.strerror}); choose a writable path with --emit-rules")
    drafted = sum(1 for s in found.sites if s.rule is not None)
    typer.echo(f"wrote {target}: {drafted} site{'' if drafted == 1 else 's'} with a draft rule, "
               f"{len(found.unplaced)} unplaced; "
               f"review it, then wrap each tool with @shadow.tool(rules={target.stem}.RULES)", err=True)


@app.command()
def ready(
    tool: Annotated[str, typer.Argument(help="The tool's name as the adapter logs it.")],
    db_url: DbUrlOption = None,
    inventory: Annotated[Path | None, typer.Option(
        "--inventory", "-i", help="A `shadow inventory --format json` file: check its proposed codes.")] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="Count only calls from this UTC date or time on, e.g. after a rules change.")] = None,
    min_calls: Annotated[int, typer.Option(help="Calls the log must hold.")] = _DEFAULT.min_calls,
    min_errors: Annotated[int, typer.Option(help="Errors the log must hold.")] = _DEFAULT.min_errors,
    max_unmapped_share: Annotated[float, typer.Option(
        help="Largest share of errors no rule mapped (0 to 1).")] = _DEFAULT.max_unmapped_share,
    max_schema_invalid: Annotated[int, typer.Option(
        help="Schema-invalid payloads allowed.")] = _DEFAULT.max_schema_invalid,
    max_leaks: Annotated[int, typer.Option(
        help="Error payloads with traceback text or paths allowed.")] = _DEFAULT.max_leaks,
    require_proposed: Annotated[bool, typer.Option(
        "--require-proposed", help="Every code the inventory proposes must have been seen.")] = False,
    rules: RulesOption = None,
    fmt: FormatOption = Format.table,
    db_alias: DbAliasOption = None,
) -> None:
    """Say whether TOOL's shadow log is good enough to cut over; exits 1 when it is not.

    With --rules (or SHADOW_RULES), every logged error is translated again with those rules (a rules fix is
    judged on the traffic already logged); without them, errors count as they were classified when logged.

    \b
    Example: shadow ready create_task --inventory inventory.json --min-calls 500
    Example: shadow ready create_task --rules tool_rules.py
    """
    from sqlalchemy.exc import SQLAlchemyError  # here: a command that needs no database loads no SQLAlchemy

    from shadow.analytics._ready import StoreMissing, readiness

    url = store_url(db_url, db_alias)
    require_call_log(url)
    given, rules_name = rules_in_force(rules)
    try:
        limits = Thresholds(min_calls, min_errors, max_unmapped_share, max_schema_invalid, max_leaks,
                            require_proposed)
        verdict = readiness(url, tool, limits, inventory=inventory, since=time_option(since, "--since"),
                            rules=given, rules_name=rules_name)
    except (ValueError, StoreMissing) as exc:
        fail(str(exc))
    except SQLAlchemyError as exc:
        store_unreachable(url, exc)
    if fmt is Format.json:
        typer.echo(json.dumps(verdict.to_dict(), indent=2))
    else:
        typer.echo(_ready_table(verdict))
    if not verdict.ready:
        raise typer.Exit(int(ExitCode.FAILED))


def _ready_table(verdict: Readiness) -> str:
    lines = [f"{verdict.tool}: {'READY' if verdict.ready else 'NOT READY'} for cutover"]
    if verdict.rules == "as logged":
        lines.append("errors classified by the rules in force when each call was logged (--rules MODULE: "
                     "translate them again with yours)")
    else:
        gone = f"; {verdict.no_longer_errors} no longer read as errors" if verdict.no_longer_errors else ""
        lines.append(f"every logged error translated again with {verdict.rules}{gone}")
    if verdict.first_call is not None and verdict.last_call is not None:
        lines.append(f"calls from {verdict.first_call:%Y-%m-%d %H:%M} to {verdict.last_call:%Y-%m-%d %H:%M} UTC")
    width = max(len(c.name) for c in verdict.checks)
    for check in verdict.checks:
        mark = "ok  " if check.passed else "FAIL"
        value, limit = str(check.value), check.limit
        if check.name == "unmapped_share":  # a share in percent, its limit too
            value, limit = f"{check.value:.1%}", f"<= {verdict.thresholds.max_unmapped_share:.1%}"
        said = f"(needs {limit})" if limit != "informational" else "(informational)"
        lines.append(f"  {mark} {check.name.ljust(width)}  {value:>8}  {said}")
    if verdict.codes_seen:
        seen = ", ".join(f"{code} {n}" for code, n in verdict.codes_seen.items())
        lines.append(f"codes seen: {seen}")
    if verdict.proposed is not None:
        lines.append(f"proposed and seen: {', '.join(verdict.proposed_seen) or 'none'}")
        lines.append(f"proposed, never seen: {', '.join(verdict.proposed_unseen) or 'none'}")
        if verdict.not_proposed:
            lines.append(f"seen, not proposed: {', '.join(verdict.not_proposed)}")
    for leak in verdict.leaks:
        lines.append(f"  leak in call {leak.call_id} ({leak.code}): {'; '.join(leak.found)}")
    if verdict.reasons:
        lines.append("to do:")
        lines += [f"  - {reason}" for reason in verdict.reasons]
    return "\n".join(lines)
