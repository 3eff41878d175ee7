"""Reading the errors no rule mapped from the call log (SQLAlchemy Core), with the text the legacy tool gave."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from sqlalchemy import func, inspect, select
from sqlalchemy.exc import SQLAlchemyError

from shadow._config import sqlite_path
from shadow._redact import scrub_text
from shadow.calllog import _db as db
from shadow.calllog._tables import calls
from shadow.contract._rules import error_text
from shadow.normalize._mcp import mcp_error_value

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


def legacy_text(payload: object) -> tuple[str, str | None]:
    """The error text a legacy payload carries, and the exception class when the legacy tool raised.

    Reads the adapter's ``{"exception", "message"}``, an MCP result (``content`` text blocks, the SDK's
    ``Error executing tool NAME:`` prefix removed), a string, or an error-shaped value."""
    if isinstance(payload, list):
        texts = [str(block.get("text", "")) for block in payload
                 if isinstance(block, Mapping) and block.get("type") == "text"]
        if texts:
            return _without_prefix("\n".join(texts)), None
    if isinstance(payload, Mapping):
        if isinstance(payload.get("exception"), str) and "message" in payload:
            return str(payload.get("message") or ""), str(payload["exception"])
        content = payload.get("content")
        if isinstance(content, list | str):  # an MCP result (proxy), or an imported one (``shadow import``)
            return legacy_text(content)
        found = error_text(payload)
        if found:
            return _without_prefix(found), None
        return json.dumps(payload, ensure_ascii=False, sort_keys=True)[:2000], None
    if isinstance(payload, str):
        return _without_prefix(payload), None
    return json.dumps(payload, ensure_ascii=False)[:2000], None


def _without_prefix(text: str) -> str:
    inner = mcp_error_value(text).get("error")
    return inner if isinstance(inner, str) else text


def read_unmapped(url: str, *, tool: str | None = None, since: dt.datetime | None = None) -> LogSlice:
    """The unmapped errors in the call log at ``url`` (of ``tool``, from ``since`` on). Raises ``LogError``."""
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
            query = (select(calls.c.tool, calls.c.legacy_payload)
                     .where(*where, is_error, calls.c.unmapped.is_(True))
                     .order_by(calls.c.ts.desc(), calls.c.id.desc()).limit(_SCAN_LIMIT))
            found = tuple(_rows(conn.execution_options(yield_per=1000).execute(query)))
    except SQLAlchemyError as exc:
        raise LogError(f"cannot read the call log at {db.safe_url(url)} ({type(exc).__name__}); check --db-url and "
                       "that the database is up", unavailable=True) from None
    return LogSlice(found, int(n_calls), int(n_errors))


def _rows(result: Iterator[tuple[str, object]]) -> Iterator[Unmapped]:
    for tool, payload in result:
        text, exception = legacy_text(payload)
        yield Unmapped(str(tool), scrub_text(text.strip())[:2000], exception)
