"""Reading a call log's rows with plain SQL in tests, the engine disposed after."""

from __future__ import annotations

from sqlalchemy import create_engine, text


def rows(url: str, sql: str) -> list[tuple[object, ...]]:
    """Every row ``sql`` returns from the database at ``url``, as tuples."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(sql))]
    finally:
        engine.dispose()
