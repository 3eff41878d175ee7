"""Legacy payloads for the evaluation's legacy arm, read from the shadow log (``calls.legacy_payload`` per code)."""

from __future__ import annotations

from collections.abc import Iterable

from shadow._config import sqlite_path
from shadow._redact import JSONValue, dumps
from shadow.contract._codes import Code


class StoreError(Exception):
    """The shadow log could not be read; ``unavailable`` when the database could not be reached."""

    def __init__(self, message: str, *, unavailable: bool = False) -> None:
        super().__init__(message)
        self.unavailable = unavailable


def legacy_payloads(
    db_url: str, codes: Iterable[Code], *, per_code: int = 10, scan: int = 1000
) -> dict[Code, list[JSONValue]]:
    """Up to ``per_code`` distinct legacy payloads per code from the shadow log, most recent first.

    Reads ``calls.legacy_payload`` of error calls whose structured ``code`` is the code, looking at the latest
    ``scan`` of them. A code the log has never seen maps to an empty list. Raises ``StoreError``.
    """
    from sqlalchemy import inspect, select  # here: importing ``shadow eval`` loads no SQLAlchemy
    from sqlalchemy.exc import SQLAlchemyError

    from shadow.calllog import _db as db
    from shadow.calllog._tables import calls

    file = sqlite_path(db_url)
    if file is not None and not file.exists():
        raise StoreError(f"no shadow log at {file}; run the shadow phase first or pass the store's --db-url")
    try:
        engine = db.engine(db_url)
    except ValueError as exc:  # not a database URL
        raise StoreError(str(exc)) from None
    found: dict[Code, list[JSONValue]] = {}
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table(calls.name):
                raise StoreError(
                    f"{db.safe_url(db_url)} holds no call log (table calls); run the shadow phase first or pass the "
                    "store's --db-url"
                )
            for code in codes:
                query = (
                    select(calls.c.legacy_payload)
                    .where(calls.c.code == code.value, calls.c.outcome == "error", calls.c.legacy_payload.is_not(None))
                    .order_by(calls.c.ts.desc(), calls.c.id.desc())
                    .limit(scan)
                )
                seen: set[str] = set()
                kept: list[JSONValue] = []
                for (payload,) in conn.execute(query):
                    if payload is None:  # JSON null
                        continue
                    key = dumps(payload)
                    if key in seen:
                        continue
                    seen.add(key)
                    kept.append(payload)
                    if len(kept) >= per_code:
                        break
                found[code] = kept
    except SQLAlchemyError as exc:
        raise StoreError(
            f"cannot read the shadow log at {db.safe_url(db_url)} ({type(exc).__name__}); check --db-url and that the "
            "database is up",
            unavailable=True,
        ) from None
    return found
