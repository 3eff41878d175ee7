"""``shadow doctor``: check the whole configuration (for deployment checks); non-zero exit on any problem."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated

import typer

from shadow import _config as config
from shadow import _fingerprint as fp
from shadow import _logs as logs
from shadow.calllog._spool import default_fallback
from shadow.cli._app import ExitCode, app
from shadow.cli._options import DbAliasOption, DbUrlOption, Format, FormatOption, store_url
from shadow.flags import _db as flags


@dataclass(frozen=True, slots=True)
class Check:
    """One verdict of ``shadow doctor``."""

    name: str
    ok: bool
    detail: str
    unavailable: bool = False


def _settings_checks() -> list[Check]:
    problems = [str(p) for p in config.env_problems()]
    level = logs.level_problem()
    if level is not None:
        problems.append(level)
    pinned = os.environ.get(flags.ENV_VAR)
    if pinned:
        problems += [f"{flags.ENV_VAR}={pinned!r}: {why}" for why in flags.parse_env_lenient(pinned)[1]]
    if problems:
        return [Check("settings", False, problem) for problem in problems]
    return [Check("settings", True, "every SHADOW_* variable is valid")]


def _key_check() -> Check:
    if os.environ.get(fp.KEY_ENV):
        return Check("fingerprint key", True, f"from {fp.KEY_ENV}")
    path = fp.key_file()
    if path.exists():
        problem = fp.key_file_problem(path)
        return Check("fingerprint key", problem is None, problem or f"{path}")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and os.access(parent, os.W_OK):
        return Check("fingerprint key", True, f"{path} will be created on first use; give every process of a fleet "
                                              f"the same file or {fp.KEY_ENV}")
    return Check("fingerprint key", False, f"{path} cannot be created; set {fp.KEY_ENV} or {fp.KEY_FILE_ENV}")


def _not_a_file(path: Path) -> str | None:
    """Why ``path`` cannot be a file shadow writes (an existing directory, device, FIFO), or None."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None  # missing: created on first use
    if stat.S_ISREG(mode):
        return None
    return "a directory" if stat.S_ISDIR(mode) else "not a regular file (a device, FIFO or socket)"


def _path_checks(settings: config.Settings) -> list[Check]:
    """The spool and the warehouse: each must name a file, in a directory that exists or can be created."""
    checks = []
    spool = Path(settings.spool_path) if settings.spool_path else None
    if spool is not None:
        what = _not_a_file(spool)
        parent = next((p for p in spool.parents if p.exists()), None)
        if what is not None:
            example = spool / "shadow.spool" if what == "a directory" else "a path such as ./shadow.spool"
            checks.append(Check("spool", False, f"SHADOW_SPOOL={spool} is {what}; name a file, for example {example}"))
        elif parent is None or not parent.is_dir() or not os.access(parent, os.W_OK):
            checks.append(Check("spool", False, f"{spool.parent} cannot be written: spooled records go to "
                                                f"{default_fallback()} instead; make it writable or set SHADOW_SPOOL"))
        else:
            checks.append(Check("spool", True, f"{spool}"))
    warehouse = settings.warehouse_path()
    what = _not_a_file(warehouse)
    if what is not None:
        checks.append(Check("warehouse", False, f"{warehouse} is {what}; name a DuckDB file with --warehouse or "
                                                "SHADOW_WAREHOUSE"))
    return checks


def _database_check(url: str) -> Check:
    from shadow.calllog import _db, _migrate

    shown = _db.safe_url(url)
    try:
        found = _migrate.current(url)
    except Exception as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        return Check("database", False, f"cannot use {shown}: {reason[0] if reason else type(exc).__name__}",
                     unavailable=True)
    head = _migrate.head()
    if found not in (None, head):
        return Check("database", False, f"{shown} is at {found}, head is {head}; run: shadow db upgrade")
    return Check("database", True, f"{shown} reachable ({found or 'no schema yet: created on first write'})")


@app.command()
def doctor(
    offline: Annotated[bool, typer.Option("--offline", help="Skip the database check.")] = False,
    db_url: DbUrlOption = None,
    fmt: FormatOption = Format.table,
    json_lines: Annotated[bool, typer.Option("--json", hidden=True, help="One JSON object per line.")] = False,
    db_alias: DbAliasOption = None,
) -> None:
    """Check the configuration: every SHADOW_* setting, the fingerprint key, and the database.

    Exits 1 on a problem (3 when the database cannot be reached), so a deployment can run it first. With
    --format json, a list of the checks (name, ok, detail, unavailable); --json prints one check per line.

    \b
    Example: SHADOW_FLAG_TTL=5s shadow doctor
    Example: shadow doctor --db-url postgresql+psycopg://agent@db:5432/shadow --format json
    """
    checks = [*_settings_checks(), _key_check(), *_path_checks(config.settings())]
    if not offline:
        url = store_url(db_url, db_alias) if db_url or db_alias else config.settings().db_url
        checks.append(_database_check(url))
    if fmt is Format.json:
        typer.echo(json.dumps([asdict(check) for check in checks], indent=2))
    else:
        for check in checks:
            typer.echo(json.dumps(asdict(check)) if json_lines else f"{'ok' if check.ok else 'PROBLEM':<8} "
                                                                     f"{check.name}: {check.detail}")
    if any(c.unavailable for c in checks):
        raise typer.Exit(int(ExitCode.UNAVAILABLE))
    if not all(c.ok for c in checks):
        raise typer.Exit(int(ExitCode.FAILED))
