"""Changing flags: ``set``, ``kill`` and ``unkill`` with their audit rows, and reading the audit log back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shadow import _clock as clock
from shadow._ids import new_id
from shadow._logs import get_logger
from shadow.flags._model import KILL_SWITCH, AuditEntry, FlagState, Mode, check_percent, parse_mode

if TYPE_CHECKING:
    from sqlalchemy import Engine

log = get_logger("shadow.flags")


class FlagWrites:
    """What ``DbFlags`` does for the CLI and admin code (never on a call's path): through SQLAlchemy."""

    def _engine(self) -> Engine:
        raise NotImplementedError

    def _exists(self) -> bool:
        raise NotImplementedError

    def invalidate(self) -> None:
        raise NotImplementedError

    def set(
        self, tool: str, mode: Mode | str, percent: int = 100, *, actor: str | None = None,
        reason: str | None = None,
    ) -> AuditEntry | None:
        """Change a tool's flag and write the audit row, in one transaction; None when it already had that flag
        (nothing is written)."""
        if not tool or tool == KILL_SWITCH or len(tool) > 200:
            raise ValueError("the tool name must be 1 to 200 characters and not '*' (use kill/unkill for that)")
        new = FlagState(parse_mode(mode), check_percent(percent) if parse_mode(mode) is Mode.CUTOVER else 100)
        return self._write(tool, new.mode.value, new.percent, actor, reason)

    def kill(self, *, actor: str | None = None, reason: str | None = None) -> AuditEntry | None:
        """Send every tool back to legacy at once (None when the kill switch was on already)."""
        return self._write(KILL_SWITCH, "killed", 100, actor, reason)

    def unkill(self, *, actor: str | None = None, reason: str | None = None) -> AuditEntry | None:
        """Lift the kill switch: every tool returns to its own flag (None when it was not on)."""
        return self._write(KILL_SWITCH, "live", 100, actor, reason, unset_is="live")

    def _write(self, tool: str, mode: str, percent: int, actor: str | None, reason: str | None,
               unset_is: str | None = None) -> AuditEntry | None:
        from sqlalchemy import select

        from shadow.calllog import _tables as tables

        who = actor or default_actor()
        now = clock.now()
        flags, audit = tables.flags, tables.flag_audit
        with self._engine().begin() as conn:
            old = conn.execute(
                select(flags.c.mode, flags.c.percent).where(flags.c.tool == tool).with_for_update()
            ).first()
            if (tuple(old) if old is not None else (unset_is, 100)) == (mode, percent):
                return None  # no change: no audit row
            values = {"mode": mode, "percent": percent, "updated_at": now, "updated_by": who}
            if old is None:
                conn.execute(flags.insert().values(tool=tool, **values))
            else:
                conn.execute(flags.update().where(flags.c.tool == tool).values(**values))
            entry = AuditEntry(new_id(), tool, old[0] if old else None, old[1] if old else None, mode, percent,
                               who, reason, now)
            conn.execute(audit.insert().values(
                id=entry.id, tool=tool, old_mode=entry.old_mode, old_percent=entry.old_percent, new_mode=mode,
                new_percent=percent, actor=who, reason=reason, ts=now,
            ))
        log.info("flag_flipped", tool=tool, old_mode=entry.old_mode, new_mode=mode, percent=percent, actor=who,
                 reason=reason)
        self.invalidate()
        return entry

    def history(self, tool: str | None = None, limit: int | None = None) -> list[AuditEntry]:
        """Audit entries, oldest first (``tool`` narrows; ``'*'`` is the kill switch)."""
        from sqlalchemy import select

        from shadow.calllog import _tables as tables

        if not self._exists():
            return []
        audit = tables.flag_audit
        query = select(audit).order_by(audit.c.ts, audit.c.id)
        if tool is not None:
            query = query.where(audit.c.tool == tool)
        with self._engine().connect() as conn:
            rows = conn.execute(query).mappings().all()
        entries = [
            AuditEntry(r["id"], r["tool"], r["old_mode"], r["old_percent"], r["new_mode"], r["new_percent"],
                       r["actor"], r["reason"], clock.utc(r["ts"]))
            for r in rows
        ]
        return entries[-limit:] if limit else entries


def rows_to_states(rows: list[tuple[Any, ...]]) -> tuple[dict[str, FlagState], bool]:
    """The ``flags`` rows (tool, mode, percent) as flag states and the kill switch; an invalid row is skipped."""
    states: dict[str, FlagState] = {}
    killed = False
    for tool, mode, percent in rows:
        if tool == KILL_SWITCH:
            killed = mode == "killed"
            continue
        try:
            states[tool] = FlagState(Mode(mode), int(percent))
        except ValueError:
            log.warning("flag_row_invalid", tool=tool, mode=mode, percent=percent)
    return states, killed


def default_actor() -> str:
    """Who is changing a flag, when not said: the OS user and host."""
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except Exception:
        user = "unknown"
    return f"{user}@{socket.gethostname()}"
