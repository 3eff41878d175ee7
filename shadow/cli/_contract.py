"""Commands about the contract itself: ``shadow schema`` and ``shadow describe``."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from shadow.cli._app import ExitCode, app, fail
from shadow.contract._describe import describe as describe_codes
from shadow.contract._schema import schema_text


class DescribeFormat(StrEnum):
    """Output formats of ``shadow describe``."""

    text = "text"
    markdown = "markdown"
    json = "json"


@app.command()
def schema() -> None:
    """Print the JSON Schema (draft 2020-12) of both payload shapes.

    Example: shadow schema > tool-result.schema.json
    """
    typer.echo(schema_text(), nl=False)


@app.command()
def describe(
    fmt: Annotated[DescribeFormat, typer.Option("--format", "-f", help="text, markdown or json.")] = (
        DescribeFormat.text
    ),
    tool: Annotated[str | None, typer.Option(
        "--tool", "-t", help="Only the codes this tool can return (seen in its shadow log, or proposed by --inventory)."
    )] = None,
    inventory: Annotated[Path | None, typer.Option(
        "--inventory", exists=True, dir_okay=False, help="A `shadow inventory --format json` file, with --tool."
    )] = None,
    db_url: Annotated[str | None, typer.Option("--db-url", help="Call-log URL (default: SHADOW_DB_URL).")] = None,
) -> None:
    """Print the paragraph a tool description should carry: every code and the three next actions.

    With --tool, only the codes that tool can return, so the prompt and the payload change together.

    Example: shadow describe --tool create_task --format markdown
    """
    codes = None
    if tool is not None:
        from sqlalchemy.exc import SQLAlchemyError

        from shadow._config import settings
        from shadow.analytics import _ready as ready

        try:
            codes = ready.codes_for_tool(db_url or settings().db_url, tool, inventory)
        except (ready.StoreMissing, ValueError) as exc:
            fail(str(exc))
        except SQLAlchemyError as exc:
            fail(f"the call log could not be read ({type(exc).__name__}); check --db-url", ExitCode.UNAVAILABLE)
    elif inventory is not None:
        fail("--inventory goes with --tool; for example: shadow describe --tool create_task --inventory inv.json")
    typer.echo(describe_codes(codes, fmt=fmt.value), nl=False)
