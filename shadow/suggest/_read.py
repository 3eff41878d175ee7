"""Reading the errors no rule mapped from the call log (SQLAlchemy Core), with the text the legacy tool gave."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shadow._config import sqlite_path
from shadow._redact import scrub_text
from shadow.suggest._shape import legacy_text

if TYPE_CHECKING:
    from shadow.contract._rules import Rules

_SCAN_LIMIT = 200_000


class LogError(Exception):
    """The call log could not be read; ``unavailable`` when the database could not be reached."""

    def __init__(self, message: str, *, unavailable: bool = False) -> None:
        super().__init__(message)
        self.unavailable = unavailable


@dataclass(frozen=True, slots=True)
class Unmapped:
    """One unmapped error: the tool, the legacy text (credentials scrubbed), the exception class if it raised."""

    tool: str
    text: str
    exception: str | None


@dataclass(frozen=True, slots=True)
class LogSlice:
    """The unmapped errors of a slice of the log, and how many calls and errors the slice holds."""

    unmapped: tuple[Unmapped, ...]
    calls: int
    errors: int


def read_unmapped(url: str, *, tool: str | None = None, since: dt.datetime | None = None,
                  rules: Rules | None = None) -> LogSlice:
    """The unmapped errors in the call log at ``url`` (of ``tool``, from ``since`` on); with ``rules``, the errors
    those rules leave unmapped when they translate the logged outcomes again. Raises ``LogError``."""
    from sqlalchemy import func, inspect, select  # here: the command line's import of this module loads none of it
    from sqlalchemy.exc import SQLAlchemyError

    from shadow.calllog import _db as db
    from shadow.calllog._tables import calls

    file = sqlite_path(url)
    if file is not None and not file.exists():
        raise LogError(f"no call log at {file}; run the shadow phase first or pass the store's --db-url")
    try:
        engine = db.engine(url)
    except ValueError as exc:
        raise LogError(str(exc)) from None
    where = []
    if tool is not None:
        where.append(calls.c.tool == tool)
    if since is not None:
        where.append(calls.c.ts >= since)
    is_error = calls.c.outcome == "error"
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table(calls.name):
                raise LogError(f"{db.safe_url(url)} holds no call log (table calls); run the shadow phase first or "
                               "pass the store's --db-url")
            n_calls = conn.execute(select(func.count()).select_from(calls).where(*where)).scalar_one()
            n_errors = conn.execute(select(func.count()).select_from(calls).where(*where, is_error)).scalar_one()
            unmapped = [calls.c.unmapped.is_(True)] if rules is None else []  # else: as those rules read them
            query = (select(calls.c.tool, calls.c.legacy_payload)
                     .where(*where, is_error, *unmapped)
                     .order_by(calls.c.ts.desc(), calls.c.id.desc()).limit(_SCAN_LIMIT))
            rows = conn.execution_options(yield_per=1000).execute(query)
            found = tuple(_rows(rows if rules is None else _still_unmapped(rows, rules)))
    except SQLAlchemyError as exc:
        raise LogError(f"cannot read the call log at {db.safe_url(url)} ({type(exc).__name__}); check --db-url and "
                       "that the database is up", unavailable=True) from None
    return LogSlice(found, int(n_calls), int(n_errors))


def _still_unmapped(result: Iterable[Any], rules: Rules) -> Iterator[tuple[str, object]]:
    """The rows whose logged outcome ``rules`` leave unmapped (or no longer read as an error: never drafted)."""
    from shadow.analytics._retranslate import retranslate

    for tool, payload in result:
        if retranslate([(payload, 1)], rules).unmapped:
            yield tool, payload


def _rows(result: Iterable[Any]) -> Iterator[Unmapped]:
    for tool, payload in result:
        text, exception = legacy_text(payload)
        yield Unmapped(str(tool), scrub_text(text.strip())[:2000], exception)
