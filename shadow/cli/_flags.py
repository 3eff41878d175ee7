"""``shadow flags``: set, show and audit per-tool modes, and the global kill switch."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from shadow._config import sqlite_path
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
    unseen_tool,
    warn,
)
from shadow.flags._db import KILL_SWITCH, AuditEntry, DbFlags, Mode

flags_app = typer.Typer(help="Per-tool modes (legacy, shadow, cutover), cutover percentages and the kill switch.",
                        no_args_is_help=True)
app.add_typer(flags_app, name="flags")


Reason = Annotated[str | None, typer.Option("--reason", "-r", help="Why, for the audit log.")]
Actor = Annotated[str | None, typer.Option("--actor", help="Who, for the audit log (default: user@host).")]


def _store(db_url: str | None, alias: str | None = None, *, reading: bool = False) -> DbFlags:
    """The flag store; for a read, a SQLite call log that does not exist yet is not created (exit 2)."""
    url = store_url(db_url, alias)
    if reading:
        require_call_log(url)
    return DbFlags(url)


def _entry_json(entry: AuditEntry) -> dict[str, object]:
    return {
        "tool": entry.tool, "old_mode": entry.old_mode, "old_percent": entry.old_percent,
        "new_mode": entry.new_mode, "new_percent": entry.new_percent, "actor": entry.actor,
        "reason": entry.reason, "ts": entry.ts.isoformat() if entry.ts else None,
    }


@flags_app.command("set")
def set_flag(
    tool: Annotated[str, typer.Argument(help="The tool's name as the adapter logs it.")],
    mode: Annotated[Mode, typer.Argument(help="legacy, shadow or cutover.")],
    percent: Annotated[int, typer.Option(
        "--percent", "-p", min=0, max=100, help="In cutover: the share of sessions served the structured payload."
    )] = 100,
    reason: Reason = None,
    actor: Actor = None,
    force: Annotated[bool, typer.Option("--force", help="Cut over although `shadow ready` says no (needs --reason).")]
    = False,
    rules: RulesOption = None,
    db_url: DbUrlOption = None,
    fmt: FormatOption = Format.table,
    db_alias: DbAliasOption = None,
) -> None:
    """Set a tool's mode (and cutover percentage); every change is written to the audit log.

    With --format json: the tool's new mode and percent, and the audit entry written (as in flags history).

    \b
    Example: shadow flags set create_task cutover --percent 25 --reason "ready: 0.4% unmapped"
    Example: shadow flags set create_task shadow --format json
    Example: shadow flags set create_task cutover --rules tool_rules.py
    """
    from sqlalchemy.exc import SQLAlchemyError  # here: a command that needs no database loads none

    if percent != 100 and mode is not Mode.CUTOVER:
        fail("--percent applies only to cutover; for example: shadow flags set TOOL cutover --percent 25")
    store = _store(db_url, db_alias)
    note = unseen_tool(store.url, tool, before_traffic=True)
    if mode is Mode.CUTOVER:
        _gate(tool, store.url, force=force, reason=reason, rules=rules)
        if force:  # the audit log says the gate was passed over, not only why
            reason = f"forced past the readiness gate: {reason}"
    try:
        entry = store.set(tool, mode, percent, actor=actor, reason=reason)
    except ValueError as exc:
        fail(str(exc))
    except SQLAlchemyError as exc:
        store_unreachable(store.url, exc)
    if note is not None:  # said once the flag is set: a refused change never reads as set
        warn(f"{note}; check the name, it may be a typo. The flag is set all the same.")
    now = mode.value + (f" {percent}%" if mode is Mode.CUTOVER else "")
    if fmt is Format.json:
        typer.echo(json.dumps({"tool": tool, "mode": mode.value, "percent": percent if mode is Mode.CUTOVER else 100,
                               "change": _entry_json(entry) if entry is not None else None}, indent=2))
        return
    if entry is None:
        typer.echo(f"{tool}: already {now}; nothing changed, no audit entry written")
        return
    was = f"{entry.old_mode}" + (f" {entry.old_percent}%" if entry.old_mode == "cutover" else "")
    typer.echo(f"{tool}: {was if entry.old_mode else '(unset)'} -> {now}")


def _gate(tool: str, url: str, *, force: bool, reason: str | None, rules: str | None) -> None:
    from sqlalchemy.exc import SQLAlchemyError

    from shadow.analytics import _ready as ready
    from shadow.calllog import _migrate as migrate

    if force:
        if not reason:
            fail("--force needs --reason, which goes into the audit log; for example --reason 'known gap, see #12'")
        return
    path = sqlite_path(url)
    if path is not None and not path.exists():  # nothing is logged; a refusal creates no call log either
        fail(f"{tool} is not ready to cut over, so its flag is unchanged: there is no call log at {path} yet; wrap "
             f"the tool with @shadow.tool and set its flag to shadow first (`shadow flags set {tool} shadow`), or "
             "pass --force --reason TEXT", ExitCode.FAILED)
    try:
        migrate.ensure(url)
        given, rules_name = rules_in_force(rules)
        verdict = ready.readiness(url, tool, rules=given, rules_name=rules_name)
    except SQLAlchemyError as exc:
        store_unreachable(url, exc)
    if not verdict.ready:
        reasons = "; ".join(verdict.reasons) or "not ready"
        judged = ("errors as classified when logged; --rules MODULE judges them with your rules"
                  if verdict.rules == "as logged" else f"every logged error translated again with {verdict.rules}")
        fail(f"{tool} is not ready to cut over, so its flag is unchanged: {reasons}. Run `shadow ready {tool}` for "
             f"details ({judged}), or pass --force --reason TEXT", ExitCode.FAILED)


@flags_app.command("show")
def show(db_url: DbUrlOption = None, fmt: FormatOption = Format.table, db_alias: DbAliasOption = None) -> None:
    """Show every tool's flag and the kill switch.

    Example: shadow flags show --format json
    """
    from sqlalchemy.exc import SQLAlchemyError  # here: a command that needs no database loads none

    store = _store(db_url, db_alias, reading=True)
    try:
        states, killed = store.states()
    except SQLAlchemyError as exc:
        store_unreachable(store.url, exc)
    if fmt is Format.json:
        typer.echo(json.dumps({"killed": killed, "tools": {
            tool: {"mode": s.mode.value, "percent": s.percent} for tool, s in sorted(states.items())}}, indent=2))
        return
    if killed:
        typer.echo("KILL SWITCH ON: every tool is served legacy")
    if not states:
        typer.echo("no flags set; every tool is legacy. Example: shadow flags set TOOL shadow")
        return
    width = max(len(t) for t in states)
    for tool, state in sorted(states.items()):
        pct = f" {state.percent}%" if state.mode is Mode.CUTOVER else ""
        typer.echo(f"{tool.ljust(width)}  {state.mode.value}{pct}")


@flags_app.command("history")
def history(
    tool: Annotated[str | None, typer.Option("--tool", "-t", help="Only this tool ('*' for the kill switch).")] = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=1, help="The newest N entries.")] = None,
    db_url: DbUrlOption = None,
    fmt: FormatOption = Format.table,
    db_alias: DbAliasOption = None,
) -> None:
    """Show the audit log of flag changes: who changed what, when and why.

    Example: shadow flags history --tool create_task
    """
    from sqlalchemy.exc import SQLAlchemyError  # here: a command that needs no database loads none

    store = _store(db_url, db_alias, reading=True)
    try:
        entries = store.history(tool, limit)
    except SQLAlchemyError as exc:
        store_unreachable(store.url, exc)
    if fmt is Format.json:
        typer.echo(json.dumps([_entry_json(e) for e in entries], indent=2))
        return
    for e in entries:
        if e.tool == KILL_SWITCH:
            change = "kill switch ON" if e.new_mode == "killed" else "kill switch off"
        else:
            old = f"{e.old_mode}/{e.old_percent}" if e.old_mode else "(unset)"
            change = f"{old} -> {e.new_mode}/{e.new_percent}"
        typer.echo(f"{e.ts.isoformat(timespec='seconds')}  {e.tool}  {change}  by {e.actor}"
                   + (f"  ({e.reason})" if e.reason else ""))
    if not entries:
        typer.echo("no flag changes recorded")


@flags_app.command("kill")
def kill(
    reason: Reason = None, actor: Actor = None, db_url: DbUrlOption = None, fmt: FormatOption = Format.table,
    db_alias: DbAliasOption = None,
) -> None:
    """Send every tool back to legacy at once (every process sees it within the flag TTL).

    With --format json: {"killed": true, "change": the audit entry written}.

    \b
    Example: shadow flags kill --reason "loop rate up after cutover"
    Example: shadow flags kill --reason "loop rate up" --format json
    """
    _kill_switch(True, reason, actor, _store(db_url, db_alias), fmt)


@flags_app.command("unkill")
def unkill(
    reason: Reason = None, actor: Actor = None, db_url: DbUrlOption = None, fmt: FormatOption = Format.table,
    db_alias: DbAliasOption = None,
) -> None:
    """Lift the kill switch: every tool returns to its own flag.

    With --format json: {"killed": false, "change": the audit entry written}.

    \b
    Example: shadow flags unkill --reason "fixed"
    Example: shadow flags unkill --reason "fixed" --format json
    """
    _kill_switch(False, reason, actor, _store(db_url, db_alias), fmt)


def _kill_switch(on: bool, reason: str | None, actor: str | None, store: DbFlags, fmt: Format) -> None:
    from sqlalchemy.exc import SQLAlchemyError

    try:
        entry = (store.kill if on else store.unkill)(actor=actor, reason=reason)
    except SQLAlchemyError as exc:
        store_unreachable(store.url, exc)
    if fmt is Format.json:
        typer.echo(json.dumps({"killed": on, "change": _entry_json(entry) if entry is not None else None}, indent=2))
        return
    already = "" if entry is not None else " (already; nothing changed, no audit entry written)"
    said = "kill switch ON: every tool is served legacy" if on else "kill switch off: tools follow their own flags"
    typer.echo(said + already)
