"""``shadow demo``: a fresh SQLite store, simulated agent traffic through shadow and cutover, report and dashboard."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from shadow import _config as config
from shadow.analytics._report import LoopRateReport, loop_rate_report
from shadow.analytics._warehouse import SyncResult, Warehouse
from shadow.calllog import _db as db
from shadow.calllog import _migrate as migrate
from shadow.calllog._writer import get_writer
from shadow.demo._simulate import FleetResult, run_fleet

SIMULATED: Final = "SIMULATED TRAFFIC: every call below was made by shadow's simulated agents, not by a real model."
DB_FILE: Final = "shadow.db"
WAREHOUSE_FILE: Final = "shadow.duckdb"
DASHBOARD_FILE: Final = "cutover.html"


@dataclass(frozen=True, slots=True)
class DemoResult:
    """Where the demo wrote its store, warehouse and dashboard, and what it saw."""

    directory: Path
    db_url: str
    warehouse: Path
    dashboard: Path | None
    fleet: FleetResult
    sync: SyncResult
    report: LoopRateReport


def _fresh(directory: Path) -> None:
    """Remove only the files a previous demo run wrote in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in (DB_FILE, f"{DB_FILE}-wal", f"{DB_FILE}-shm", WAREHOUSE_FILE, f"{WAREHOUSE_FILE}.wal",
                 DASHBOARD_FILE):
        with contextlib.suppress(FileNotFoundError):
            (directory / name).unlink()
    for spool in directory.glob("shadow.*.spool"):
        spool.unlink()


def run_demo(
    directory: Path, *, sessions: int = 800, seed: int = 7, dashboard: bool = True,
    progress: Callable[[int], None] | None = None, step: Callable[[str], None] | None = None,
) -> DemoResult:
    """Run the whole loop on the embedded default in ``directory``; reproducible for a given ``seed``.

    ``progress(n)`` is called as simulated tasks finish; ``step(label)`` as each later step starts.
    """
    say = step or (lambda label: None)
    if sessions < 1:
        raise ValueError(f"--sessions must be at least 1, not {sessions}")
    directory = directory.resolve()
    _fresh(directory)
    url = f"sqlite:///{directory / DB_FILE}"
    warehouse_path = directory / WAREHOUSE_FILE
    previous = config.settings()
    config.configure(db_url=url, warehouse=str(warehouse_path), spool_path=str(directory / "shadow.demo.spool"),
                     store=None)  # the simulated calls go to the demo's own database, never a configured store
    try:
        migrate.ensure(url)
        fleet = run_fleet(url, sessions=sessions, seed=seed, progress=progress)
        say("writing the last records to the call log")
        if not get_writer().flush(120):
            raise RuntimeError("the call log writer did not finish in 120 s; the demo's numbers would be partial")
        warehouse = Warehouse.open(warehouse_path)
        try:
            say("syncing the DuckDB warehouse")
            synced = warehouse.sync(url, rebuild=True)
            say("building the loop-rate report")
            report = loop_rate_report(warehouse, seed=seed)
            out: Path | None = None
            if dashboard:
                from shadow.dashboard._page import write_dashboard

                say("writing the dashboard")
                out = write_dashboard(warehouse, directory / DASHBOARD_FILE, subtitle=SIMULATED)
        finally:
            warehouse.close()
    finally:
        get_writer().flush(30)
        config.configure(**{f: getattr(previous, f) for f in ("db_url", "warehouse", "spool_path", "store")})
        db.dispose_all()
    return DemoResult(directory, url, warehouse_path, out, fleet, synced, report)
