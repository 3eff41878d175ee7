"""``shadow rules suggest``: group the unmapped errors of the call log and draft rules for them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from shadow._config import settings
from shadow.cli._app import ExitCode, app, fail
from shadow.cli._integrations import RulesOption, rules_in_force
from shadow.cli._options import (
    DbAliasOption,
    DbUrlOption,
    Format,
    FormatOption,
    require_call_log,
    store_url,
    time_option,
)
from shadow.suggest import LogError, Suggestions, emit_rules, read_unmapped, suggest

rules_app = typer.Typer(name="rules", help="Rules learned from traffic: what the shadow log shows no rule maps.",
                        no_args_is_help=True)
app.add_typer(rules_app)


@rules_app.command("suggest")
def suggest_command(
    tool: Annotated[str | None, typer.Option("--tool", "-t", help="Only this tool's errors.")] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="Only calls from this UTC date or time on, e.g. after the last rules change.")] = None,
    db_url: DbUrlOption = None,
    emit: Annotated[Path | None, typer.Option(
        "--emit-rules", help="Write a Python module defining RULES: the built-in rules plus one draft rule per "
                             "message shape with a proposed code.")] = None,
    top: Annotated[int, typer.Option("--top", min=1, help="Show at most this many groups.")] = 20,
    fmt: FormatOption = Format.table,
    db_alias: DbAliasOption = None,
    rules: RulesOption = None,
) -> None:
    """Group the errors no rule mapped by message shape and propose a code, a remedy and a rule for each.

    Numbers, ids, quoted values, paths, URLs and dates are masked, so one group holds every message of one
    shape; each group's proposal comes from a table of phrases ("no changes staged" is failed_precondition,
    "did not resolve to an object" is not_found, ...). Review the emitted module, use it as your rules, run the
    shadow phase again, and check `shadow ready TOOL --since ...`: the unmapped share falls. With `--rules` (or
    SHADOW_RULES), the errors are those your rules leave unmapped, and the emitted module extends your rules
    instead of the built-in ones alone.

    Example: shadow rules suggest --tool git_checkout --rules tool_rules.py --emit-rules learned_rules.py
    """
    if emit is not None and (emit.suffix != ".py" or not emit.stem.isidentifier()):
        fail(f"--emit-rules needs a .py file name that can be imported, for example learned_rules.py (not {emit})")
    when = time_option(since, "--since")
    url = store_url(db_url, db_alias)
    require_call_log(url)
    base, _ = rules_in_force(rules)
    ref = rules if rules is not None else (settings().rules if base is not None else None)
    try:
        found = suggest(read_unmapped(url, tool=tool, since=when, rules=base), tool=tool, since=when)
    except LogError as exc:
        fail(str(exc), ExitCode.UNAVAILABLE if exc.unavailable else ExitCode.USAGE)
    if emit is not None:
        try:
            emit.write_text(emit_rules(found, tool or url, base=ref), encoding="utf-8")
        except OSError as exc:
            fail(f"could not write {emit} ({exc.strerror}); choose a writable path with --emit-rules")
        drafted = sum(1 for g in found.groups if g.code is not None)
        left = len(found.groups) - drafted
        typer.echo(f"wrote {emit}: {drafted} draft rule{'' if drafted == 1 else 's'}, {left} "
                   f"shape{'' if left == 1 else 's'} unplaced; review "
                   f"it, then pass it as your rules (rules={emit.stem}.RULES, or --rules {emit})", err=True)
    if fmt is Format.json:
        typer.echo(json.dumps(found.to_dict(), indent=2, ensure_ascii=False))
    else:
        typer.echo(format_table(found, top))


def format_table(found: Suggestions, top: int) -> str:
    """The suggestions for a terminal: one block per group, largest first."""
    lines = [found.summary()]
    if not found.groups:
        lines.append("nothing to suggest: every logged error was mapped by a rule")
    for rank, group in enumerate(found.groups[:top], 1):
        code = (f"{group.code.value} (confidence {group.confidence:.2f})" if group.code is not None else
                "UNPLACED, closest: " + ", ".join(c.value for c in group.candidates))
        raised = f" (raised {group.exception})" if group.exception else ""
        lines += [
            f"{rank}. {group.tool}{raised}: {group.count} ({group.share:.1%}) -> {code}",
            f"   example: {' '.join(group.example.split())[:200]}",
            f"   shape:   {' '.join(group.shape.text.split())[:200]}",
            f"   why:     {group.reason}",
        ]
        if group.message is not None:
            lines.append(f"   message: {group.message}")
        if group.shape.fields:
            lines.append(f"   context: {', '.join(group.shape.fields)}")
    if len(found.groups) > top:
        lines.append(f"... {len(found.groups) - top} more shapes (--top N, or --format json for all)")
    return "\n".join(lines)
