"""Commands about the call log's database: ``shadow db upgrade`` and ``shadow db current``."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from shadow._config import sqlite_path
from shadow.cli._app import ExitCode, app, fail
from shadow.cli._options import DbAliasOption, DbUrlOption, Format, FormatOption, store_unreachable, store_url

db_app = typer.Typer(
    name="db",
    help="Create, upgrade and inspect the call log's database (SQLite or PostgreSQL).",
    no_args_is_help=True,
)
app.add_typer(db_app, name="db")


def _resolve(db_url: str | None, alias: str | None) -> tuple[str, str]:
    """The URL to use and its display form (password hidden); a bad URL is a usage error."""
    from sqlalchemy.engine import make_url  # here: a command that needs no database loads no SQLAlchemy

    full = store_url(db_url, alias)
    return full, make_url(full).render_as_string(hide_password=True)


@db_app.command()
def upgrade(
    db_url: DbUrlOption = None,
    revision: Annotated[str, typer.Option("--revision", help="Target revision.")] = "head",
    fmt: FormatOption = Format.table,
    db_alias: DbAliasOption = None,
) -> None:
    """Create the call log's tables, or upgrade them to the newest schema (safe to run again; safe concurrently).

    Example: shadow db upgrade --db-url postgresql+psycopg://agent@db.internal:5432/shadow
    """
    from alembic.script.revision import RevisionError
    from alembic.util import CommandError
    from sqlalchemy import exc

    from shadow.calllog import _migrate as migrate

    full, shown = _resolve(db_url, db_alias)
    try:
        before = migrate.current(full)
        migrate.upgrade(full, revision)
        after = migrate.current(full)
    except (exc.OperationalError, exc.InterfaceError, OSError) as error:
        store_unreachable(full, error)
    except exc.DatabaseError as error:  # a damaged SQLite file: "file is not a database", "malformed"
        store_unreachable(full, error)
    except exc.SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).strip().splitlines()
        fail(f"the upgrade of {shown} failed: {type(error).__name__}: {reason[0] if reason else ''}",
             ExitCode.FAILED)
    except (CommandError, RevisionError) as error:
        fail(f"{error}; use --revision head or a revision from the migrations", ExitCode.USAGE)
    if fmt is Format.json:
        typer.echo(json.dumps({"url": shown, "from": before, "to": after}))
    elif before == after:
        typer.echo(f"{shown}: already at {after}")
    else:
        typer.echo(f"{shown}: upgraded from {before or 'an empty database'} to {after}")


@db_app.command()
def current(db_url: DbUrlOption = None, fmt: FormatOption = Format.table, db_alias: DbAliasOption = None) -> None:
    """Show the schema revision of the database and whether it is the newest this version knows.

    Example: shadow db current --format json
    """
    from sqlalchemy import exc

    from shadow.calllog import _migrate as migrate

    full, shown = _resolve(db_url, db_alias)
    path = sqlite_path(full)
    try:
        found = None if path is not None and not path.exists() else migrate.current(full)  # reading creates nothing
    except (exc.DatabaseError, exc.InterfaceError, OSError) as error:  # DatabaseError: a damaged SQLite file
        store_unreachable(full, error)
    head = migrate.head()
    if fmt is Format.json:
        typer.echo(json.dumps({"url": shown, "current": found, "head": head, "up_to_date": found == head}))
        return
    if found is None:
        typer.echo(f"{shown}: no schema yet (head is {head}); run: shadow db upgrade")
    elif found == head:
        typer.echo(f"{shown}: {found} (head)")
    else:
        typer.echo(f"{shown}: {found}; head is {head}; run: shadow db upgrade")
