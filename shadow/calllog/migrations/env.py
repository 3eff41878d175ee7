"""Alembic environment of the call log: the schema is ``shadow.calllog.metadata``, the URL comes from the caller."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, pool

from shadow._config import settings
from shadow.calllog import _db as db
from shadow.calllog._tables import metadata

config = context.config


def _url() -> str:
    """The URL passed in by ``shadow.calllog.upgrade`` (or an alembic.ini), else the configured ``db_url``."""
    url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
    return db.normalise_url(url or settings().db_url)


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def run_migrations_offline() -> None:
    """Emit the SQL of the migrations instead of running them (``alembic upgrade head --sql``)."""
    url = _url()
    context.configure(
        url=url,
        target_metadata=metadata,
        literal_binds=True,
        render_as_batch=url.startswith("sqlite"),
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run the migrations on the caller's connection (inside its transaction), or on a new one."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = db.create(_url(), poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            _configure(conn)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
