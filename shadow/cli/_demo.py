"""``shadow demo``: the whole loop on simulated traffic, on the embedded SQLite default."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from shadow.cli._app import ExitCode, app, fail, need_extra
from shadow.cli._options import Format, FormatOption


@app.command()
def demo(
    directory: Annotated[Path, typer.Option("--dir", "-d", file_okay=False,
                                            help="Where to write shadow.db, shadow.duckdb and cutover.html.")]
    = Path("shadow-demo"),
    sessions: Annotated[int, typer.Option("--sessions", "-n", min=1, max=200_000,
                                          help="Simulated agent tasks (about 10 calls each).")] = 800,
    seed: Annotated[int, typer.Option("--seed", help="Seed: the same seed gives the same traffic and report.")] = 7,
    fmt: FormatOption = Format.table,
) -> None:
    """Simulate an agent fleet through a shadow phase and a 50% cutover, then report and draw the dashboard.

    Every record is simulated traffic (the output says so). It creates a fresh SQLite store in --dir, wraps five
    legacy tools with the real adapter, syncs the DuckDB warehouse, prints the loop-rate report and writes
    cutover.html. With --format json, the report's JSON with "simulated": true added.

    Example: shadow demo --sessions 1000 --seed 3
    """
    need_extra("dashboard")
    from shadow.analytics._render import render_table
    from shadow.demo._run import SIMULATED, run_demo

    err = sys.stderr
    typer.echo(SIMULATED, err=True)
    try:
        with typer.progressbar(length=sessions, label="simulating agent tasks", file=err) as bar:
            result = run_demo(directory, sessions=sessions, seed=seed, progress=bar.update)
    except (ValueError, OSError) as exc:
        fail(str(exc))
    except RuntimeError as exc:
        fail(str(exc), ExitCode.FAILED)
    if fmt is Format.json:
        typer.echo(json.dumps({"simulated": True, "notice": SIMULATED, **result.report.to_dict()}, indent=2))
    else:
        typer.echo(f"{SIMULATED}\n")
        typer.echo(render_table(result.report))
        typer.echo("")
    typer.echo(f"store:     {result.db_url}  ({result.fleet.calls} simulated calls, {result.fleet.sessions} sessions)",
               err=fmt is Format.json)
    typer.echo(f"warehouse: {result.warehouse}", err=fmt is Format.json)
    if result.dashboard is not None:
        typer.echo(f"dashboard: {result.dashboard}  (open it in a browser, or: shadow dashboard --serve "
                   f"--db-url {result.db_url} --warehouse {result.warehouse})", err=fmt is Format.json)
    typer.echo("Next: shadow report loop-rate --db-url " + result.db_url + " --warehouse " + str(result.warehouse),
               err=fmt is Format.json)
