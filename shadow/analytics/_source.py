"""Reading the call log (SQLite or PostgreSQL) for the warehouse: Arrow record batches, counts, watermarks."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    DateTime,
    Engine,
    Table,
    Text,
    bindparam,
    func,
    inspect,
    select,
    type_coerce,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from shadow.calllog import _db as db


class WarehouseError(Exception):
    """The warehouse cannot do what was asked; the message says how to fix it."""


class SourceError(WarehouseError):
    """The call log cannot be read; the message says how to fix it."""


class NoCallLog(SourceError):
    """The database holds no call log (its tables are missing); the message says how to make one."""


def reason(exc: BaseException) -> str:
    """The first line of what a driver said (the DB-API error under SQLAlchemy's), else the error's class."""
    inner = getattr(exc, "orig", None) or exc
    text = str(inner).strip()
    return text.splitlines()[0] if text else type(inner).__name__


def display_url(url: str) -> str:
    """``url`` without its password, for messages and the warehouse's record of its source."""
    return make_url(db.normalise_url(url)).render_as_string(hide_password=True)


def lower_param(lower: dt.datetime | None, dialect: str) -> Any:
    if lower is None:
        return None
    if dialect == "postgresql":
        return lower.replace(tzinfo=dt.UTC)
    # SQLite keeps times as text ('YYYY-MM-DD HH:MM:SS[.ffffff]'); a bound floored to the whole second compares
    # at or below every stored time of that second or later, whatever fraction they carry.
    return lower.replace(microsecond=0).strftime("%Y-%m-%d %H:%M:%S")


def where_inserted(table: Table, dialect: str) -> ColumnElement[bool]:
    column = table.c.inserted_at
    if dialect == "postgresql":
        return column >= bindparam("lower", type_=DateTime(timezone=True))
    return type_coerce(column, Text) >= bindparam("lower", type_=Text)


def oldest_writer(engine: Engine) -> dt.datetime | None:
    """PostgreSQL: the start of the oldest open transaction that has written (its rows carry that insert time)."""
    if engine.dialect.name != "postgresql":
        return None
    query = (
        "SELECT min(xact_start) FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid() AND backend_xid IS NOT NULL"
    )
    with engine.connect() as conn:
        found = conn.exec_driver_sql(query).scalar()
    if found is None:
        return None
    assert isinstance(found, dt.datetime)
    return found.astimezone(dt.UTC).replace(tzinfo=None)


def count_rows(engine: Engine, table: Table, lower: dt.datetime | None) -> int:
    """The rows inserted at or after ``lower``; with no bound, the table's size as the database estimates it.

    A whole-table ``count(*)`` scans the table (PostgreSQL: 40 ms of the server per million calls, before the read
    can start), while the count only sizes the progress bar and the parallel parts of the read. The call log is
    append-only, so SQLite's rowid span is its size; PostgreSQL's planner estimate (the rows per page of the last
    ANALYZE times the pages now) follows a table that grew since, and a table never analysed is counted.
    """
    dialect = engine.dialect.name
    if lower is None:
        found = _estimate(engine, table)
        if found is not None:
            return found
    stmt = select(func.count()).select_from(table)
    params: dict[str, Any] = {}
    if lower is not None:
        stmt = stmt.where(where_inserted(table, dialect))
        params["lower"] = lower_param(lower, dialect)
    with engine.connect() as conn:
        return int(conn.execute(stmt, params).scalar_one())


def rowid_range(engine: Engine, table: Table) -> tuple[int, int] | None:
    """A SQLite table's lowest and highest rowid (None when it is empty)."""
    name = '"' + table.name.replace('"', '""') + '"'
    with engine.connect() as conn:
        # two subqueries: SQLite answers a lone min() or max() of the rowid from the b-tree's ends, but scans the
        # whole table for both in one SELECT (50 ms on a quarter of a million calls)
        low, high = conn.exec_driver_sql(f"SELECT (SELECT min(rowid) FROM {name}), (SELECT max(rowid) FROM {name})"
                                         ).one()
    return None if low is None else (int(low), int(high))


def _estimate(engine: Engine, table: Table) -> int | None:
    if engine.dialect.name == "sqlite":
        span = rowid_range(engine, table)
        return 0 if span is None else span[1] - span[0] + 1
    if engine.dialect.name == "postgresql":
        query = ("SELECT reltuples, relpages, pg_relation_size(oid) / current_setting('block_size')::bigint "
                 "FROM pg_class WHERE oid = CAST(%(name)s AS regclass)")
        with engine.connect() as conn:
            row = conn.exec_driver_sql(query, {"name": table.name}).one()
        tuples, pages, now = float(row[0]), int(row[1]), int(row[2])
        if pages > 0 and tuples >= 0:  # analysed (an empty table has no pages, and is counted in no time)
            return round(tuples / pages * now)
    return None


def check_source(engine: Engine, url: str, needed: Sequence[Table]) -> None:
    try:
        names = set(inspect(engine).get_table_names())
    except SQLAlchemyError as exc:
        what = ("that the file is an intact SQLite database" if engine.dialect.name == "sqlite"
                else "that the database is running")
        raise SourceError(f"cannot read the call log at {display_url(url)}: {reason(exc)}; check the "
                          f"URL (SHADOW_DB_URL or --db-url) and {what}") from None
    missing = [t.name for t in needed if t.name not in names]
    if missing:
        raise NoCallLog(f"{display_url(url)} has no call log (missing tables: {', '.join(missing)}); create it "
                          "with `shadow db upgrade`, or point SHADOW_DB_URL / --db-url at the store your tools log to")


