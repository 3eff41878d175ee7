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
    wide: Annotated[bool, typer.Option("--wide", help="Wider tables with every column, the example payloads and "
                                       "every writing process (the default fits 100 columns).")] = False,
) -> None:
    """Simulate an agent fleet through a shadow phase and a 50% cutover, then report and draw the dashboard.

    Every record is simulated traffic (the output says so). It creates a fresh SQLite store in --dir, wraps five
    legacy tools with the real adapter, syncs the DuckDB warehouse, prints the loop-rate report and writes
    cutover.html. With --format json, the report's JSON with "simulated": true added.

    Example: shadow demo --sessions 1000 --seed 3
    """
    need_extra("dashboard")
    from shadow.analytics._render import render_table
    from shadow.cli._progress import LineProgress
    from shadow.demo._run import SIMULATED, run_demo

    err = sys.stderr
    if fmt is Format.json:
        typer.echo(SIMULATED, err=True)  # stdout carries the JSON, which says "simulated": true
    else:
        typer.echo(f"{SIMULATED}\n")  # once, on stdout: the table below leaves it out
    lines = LineProgress(err)
    try:
        if err.isatty():
            with typer.progressbar(length=sessions, label="simulating agent tasks", file=err) as bar:
                result = run_demo(directory, sessions=sessions, seed=seed, progress=bar.update, step=lines.step)
        else:  # piped: a plain line every few seconds, so the run does not look hung
            lines.count("simulating agent tasks", sessions)
            result = run_demo(directory, sessions=sessions, seed=seed, progress=lines.update, step=lines.step)
    except (ValueError, OSError) as exc:
        fail(str(exc))
    except RuntimeError as exc:
        fail(str(exc), ExitCode.FAILED)
    finally:
        lines.close()
    if fmt is Format.json:
        typer.echo(json.dumps({"simulated": True, "notice": SIMULATED, **result.report.to_dict()}, indent=2))
    else:
        typer.echo(render_table(result.report, wide=wide, banner=False))
    to_err = fmt is Format.json
    typer.echo(f"store:     {result.db_url}", err=to_err)
    typer.echo(f"           {result.fleet.calls:,} simulated calls in {result.fleet.sessions:,} sessions", err=to_err)
    typer.echo(f"warehouse: {result.warehouse}", err=to_err)
    if result.dashboard is not None:
        typer.echo(f"dashboard: {result.dashboard}  (open it in a browser)", err=to_err)
    where = f" \\\n    --db-url {result.db_url} \\\n    --warehouse {result.warehouse}"
    typer.echo(f"Next: shadow report loop-rate{where}", err=to_err)
    if result.dashboard is not None:
        typer.echo(f"  or: shadow dashboard --serve{where}", err=to_err)
