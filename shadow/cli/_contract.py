"""Commands about the contract itself: ``shadow schema`` and ``shadow describe``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shadow.cli._app import app, fail
from shadow.cli._options import (
    DbAliasOption,
    DbUrlOption,
    DescribeFormatOption,
    Format,
    require_call_log,
    store_unreachable,
    store_url,
    unseen_tool,
    warn,
)
from shadow.contract._codes import Code
from shadow.contract._describe import Format as DescribeShape
from shadow.contract._describe import describe as describe_codes
from shadow.contract._schema import schema_text


@app.command()
def schema() -> None:
    """Print the JSON Schema (draft 2020-12) of both payload shapes.

    Example: shadow schema > tool-result.schema.json
    """
    typer.echo(schema_text(), nl=False)


@app.command()
def describe(
    fmt: DescribeFormatOption = Format.table,
    tool: Annotated[str | None, typer.Option(
        "--tool", "-t", help="Only the codes this tool can return (seen in its shadow log, or proposed by --inventory)."
    )] = None,
    inventory: Annotated[Path | None, typer.Option(
        "--inventory", exists=True, dir_okay=False, help="A `shadow inventory --format json` file, with --tool."
    )] = None,
    not_idempotent: Annotated[bool, typer.Option(
        "--not-idempotent", help="The tool is wrapped with idempotent=False: its service failures are ask_user "
        "(with --tool this is also read from its log)."
    )] = False,
    brief: Annotated[bool, typer.Option(
        "--brief", help="The paragraph in about a third of the words (the shape, the next actions, the codes by "
        "name), for descriptions sent with every request: what shadow proxy adds to each tool by default."
    )] = False,
    db_url: DbUrlOption = None,
    db_alias: DbAliasOption = None,
) -> None:
    """Print the paragraph a tool description should carry: every code and the three next actions.

    With --tool, only the codes that tool can return, so the prompt and the payload change together; a tool its
    log shows as not idempotent (its service failures served ask_user) gets them as ask_user here too.

    Example: shadow describe --tool charge_card --not-idempotent --format markdown
    """
    codes, idempotent = None, True
    if tool is not None:
        codes, idempotent = _codes_for(tool, store_url(db_url, db_alias), inventory)
    elif inventory is not None:
        fail("--inventory goes with --tool; for example: shadow describe --tool create_task --inventory inv.json")
    shape: DescribeShape = "json" if fmt is Format.json else "markdown" if fmt is Format.markdown else "text"
    if brief:
        if fmt not in (Format.table, Format.text):
            fail(f"--brief is one plain paragraph; leave out --format {fmt.value}, for example: "
                 "shadow describe --brief")
        shape = "brief"
    typer.echo(describe_codes(codes, fmt=shape, idempotent=idempotent and not not_idempotent), nl=False)


def _codes_for(tool: str, url: str, inventory: Path | None) -> tuple[list[Code], bool]:
    """The codes ``tool`` can return, and whether its log reads as an idempotent tool's (a non-idempotent tool's
    service failures are ``ask_user``); warns when neither the log nor the inventory knows the tool."""
    from sqlalchemy.exc import SQLAlchemyError

    from shadow.analytics import _ready as ready

    require_call_log(url)
    try:
        codes = ready.codes_for_tool(url, tool, inventory)
        idempotent = ready.logged_idempotent(url, tool)
        proposed = ready.load_proposed(inventory, tool) if inventory is not None else ()
        note = None if proposed else unseen_tool(url, tool)
    except (ready.StoreMissing, ValueError) as exc:
        fail(str(exc))
    except SQLAlchemyError as exc:
        store_unreachable(url, exc)
    if note is not None:
        also = " and the inventory proposes nothing for it" if inventory is not None else ""
        warn(f"{note}{also}; check the name. Listed: only internal_error, which every wrapped tool can return.")
    return codes, idempotent
