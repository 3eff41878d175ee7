"""Commands about the contract itself: ``shadow schema`` and ``shadow describe``."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from shadow.cli._app import app
from shadow.describe import describe as describe_codes
from shadow.schema import schema_text


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
) -> None:
    """Print the paragraph a tool description should carry: every code and the three next actions.

    Example: shadow describe --format markdown
    """
    typer.echo(describe_codes(fmt=fmt.value), nl=False)
