"""The call log: records, the schema and its migrations, stores, the spool and the background writer.

Each name is imported on first use (PEP 562): ``import shadow`` needs the writer and the records, not SQLAlchemy or
Alembic, which the schema, the migrations and ``SqlStore``'s writes load (in the writer's thread: ``shadow._lazy``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadow._lazy import lazy_names

if TYPE_CHECKING:
    from shadow.calllog._migrate import current, head, upgrade
    from shadow.calllog._otel import OtlpStore, annotate_current_span, annotate_spans, store_for_url
    from shadow.calllog._records import CallRecord, MarkRecord, Record
    from shadow.calllog._spool import Spool
    from shadow.calllog._store import SqlStore, StoreUnavailable
    from shadow.calllog._tables import metadata
    from shadow.calllog._writer import flush, get_writer, set_writer
    from shadow.calllog._writer_stats import WriterStats
    from shadow.calllog._writer_thread import RecordDropped, Writer
    from shadow.typing import Store

_WHERE = {
    "CallRecord": "shadow.calllog._records",
    "MarkRecord": "shadow.calllog._records",
    "OtlpStore": "shadow.calllog._otel",
    "Record": "shadow.calllog._records",
    "RecordDropped": "shadow.calllog._writer_thread",
    "Spool": "shadow.calllog._spool",
    "SqlStore": "shadow.calllog._store",
    "Store": "shadow.typing",
    "StoreUnavailable": "shadow.calllog._store",
    "Writer": "shadow.calllog._writer_thread",
    "WriterStats": "shadow.calllog._writer_stats",
    "annotate_current_span": "shadow.calllog._otel",
    "annotate_spans": "shadow.calllog._otel",
    "current": "shadow.calllog._migrate",
    "flush": "shadow.calllog._writer",
    "get_writer": "shadow.calllog._writer",
    "head": "shadow.calllog._migrate",
    "metadata": "shadow.calllog._tables",
    "set_writer": "shadow.calllog._writer",
    "store_for_url": "shadow.calllog._otel",
    "upgrade": "shadow.calllog._migrate",
}

__all__ = [
    "CallRecord",
    "MarkRecord",
    "OtlpStore",
    "Record",
    "RecordDropped",
    "Spool",
    "SqlStore",
    "Store",
    "StoreUnavailable",
    "Writer",
    "WriterStats",
    "annotate_current_span",
    "annotate_spans",
    "current",
    "flush",
    "get_writer",
    "head",
    "metadata",
    "set_writer",
    "store_for_url",
    "upgrade",
]

__getattr__ = lazy_names(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(__all__)
