"""The call log: records, the schema and its migrations, stores, the spool and the background writer."""

from __future__ import annotations

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
