"""``shadow dashboard``: write the cutover dashboard (one offline HTML file) and optionally serve it on localhost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from shadow.cli._app import ExitCode, app, fail, need_extra
from shadow.cli._integrations import RulesOption, rules_in_force
from shadow.cli._options import (
    DbAliasOption,
    DbUrlOption,
    Format,
    FormatOption,
    MemoryLimitOption,
    WarehouseOption,
    time_range,
)
from shadow.cli._report import (
    Engine,
    EngineOption,
    ParquetOption,
    SparkConfOption,
    SparkMasterOption,
    check_engine,
    errors_to_exit,
    models_on,
    open_for_reading,
    stores,
)


@app.command()
def dashboard(
    out: Annotated[Path, typer.Option("--out", "-o", dir_okay=False, help="The HTML file to write.")]
    = Path("cutover.html"),
    tool: Annotated[str | None, typer.Option("--tool", "-t", help="Only this tool's calls and errors.")] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="From this UTC date or time (inclusive), e.g. 2025-03-01.")] = None,
    until: Annotated[str | None, typer.Option(
        "--until", help="Up to this UTC date (inclusive, whole day) or time (exclusive).")] = None,
    subtitle: Annotated[str | None, typer.Option(
        "--subtitle", help="A plain statement shown at the top, e.g. 'staging fleet, week 12'.")] = None,
    db_url: DbUrlOption = None,
    warehouse: WarehouseOption = None,
    memory_limit: MemoryLimitOption = None,
    no_sync: Annotated[bool, typer.Option("--no-sync", help="Draw the warehouse as it is.")] = False,
    serve: Annotated[bool, typer.Option("--serve", help="Then serve the page until Ctrl-C.")] = False,
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Port for --serve (0: any free one).")]
    = 8050,
    host: Annotated[str, typer.Option(
        "--host", help="Address for --serve; the default answers this machine only. 0.0.0.0 shares the page with "
        "your network: do that only on a network you trust.")] = "127.0.0.1",
    refresh: Annotated[float, typer.Option(
        "--refresh", min=0, help="With --serve: sync and rebuild on a request at most every this many seconds "
        "(0: never).")] = 60.0,
    fmt: FormatOption = Format.table,
    db_alias: DbAliasOption = None,
    private: Annotated[bool, typer.Option("--private", help="Write the file readable by you only (0600); "
                                          "by default it is an ordinary file (0644 under umask 022).")] = False,
    engine: EngineOption = Engine.duckdb,
    parquet: ParquetOption = None,
    spark_master: SparkMasterOption = "local[*]",
    spark_conf: SparkConfOption = None,
    rules: RulesOption = None,
) -> None:
    """Write the cutover dashboard: one self-contained HTML file that works offline (no request leaves the page).

    Loop rate over time per arm with the cutover moments, per-tool before vs after with the test, readiness,
    error codes, follow-ups after errors and savings. Syncs the warehouse first unless --no-sync; with --parquet
    it reads a Parquet export instead, on DuckDB or (--engine spark) on Spark, which sends back only aggregates.
    With --rules (or SHADOW_RULES), every logged error is translated again with those rules for the
    recommendations and readiness.

    \b
    Example: shadow dashboard --out cutover.html --since 2025-03-01 --serve --port 8050
    Example: shadow dashboard --since 2025-03-01 --until 2025-03-07 --tool create_task
    Example: shadow dashboard --engine spark --parquet s3a://lake/shadow --spark-master yarn
    """
    need_extra("dashboard")
    start, end = time_range(since, until)
    check_engine(engine, parquet)
    given, rules_name = rules_in_force(rules)
    where = stores(db_url, db_alias, warehouse, memory_limit)
    if parquet is None:
        open_for_reading(where, no_sync=no_sync)
    from shadow.analytics._warehouse import Warehouse, WarehouseError
    from shadow.dashboard import _page as dash

    def build() -> str:
        with models_on(engine, parquet, where.warehouse, spark_master, spark_conf or [],
                       where.memory_limit) as models:
            return dash.build_dashboard(models, tool=tool, since=start, until=end, subtitle=subtitle, rules=given,
                                        rules_name=rules_name)

    try:
        page = build()
    except (WarehouseError, ValueError) as exc:
        errors_to_exit(exc)
    try:
        written = dash.write_page(page, out, private=private)
    except dash.OutputError as exc:
        fail(str(exc), ExitCode.USAGE)
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}; choose another --out", ExitCode.USAGE)
    size = written.stat().st_size
    facts: dict[str, object] = {"out": str(written.resolve()), "bytes": size, "tool": tool, "since": since,
                                "until": until}
    if fmt is not Format.json:
        typer.echo(f"wrote {written} ({size / 1e6:.1f} MB, self-contained; open it in any browser, offline)")
    if not serve:
        if fmt is Format.json:
            typer.echo(json.dumps(facts))
        return

    def rebuild() -> str:
        if not no_sync and parquet is None:
            with Warehouse.open(where.warehouse, memory_limit=where.memory_limit) as wh:
                wh.sync(where.url)
        return build()

    try:
        server = dash.serve(rebuild, host=host, port=port, refresh=refresh, page=page)
    except OSError as exc:
        fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}; choose another --port (or 0 for any free one)",
             ExitCode.UNAVAILABLE)
    if fmt is Format.json:
        typer.echo(json.dumps({**facts, "url": server.url}))
    else:
        typer.echo(f"serving the dashboard at {server.url} (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        typer.echo("stopped", err=True)
    finally:
        server.shutdown()
