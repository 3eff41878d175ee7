"""Storing one batch, and what happened to it, decided in one place: stored, the store away, or set aside.

A batch the store takes is stored. ``StoreUnavailable`` (and a store call past its deadline) means away: the
caller spools or keeps the batch. Any other error means the store refused something in it: the records are tried
one at a time, and only those the store refuses alone are set aside (kept in ``<prefix>.rejected.jsonl`` with the
reason, counted, logged); when it refuses every one of them, the fault is the store's, and that is an outage too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from shadow.calllog._bounded import BoundedStore
from shadow.calllog._outage import Outage, StoreUnavailable
from shadow.calllog._records import Built, as_record
from shadow.calllog._spool import Spool
from shadow.typing import Store

Fail = Callable[..., None]


class Storer:
    """Writes batches through a ``BoundedStore`` and classifies the result; counts what it sets aside."""

    def __init__(self, store: Store, calls: BoundedStore, outage: Outage, spool: Spool | None, fail: Fail,
                 on_prepared: Callable[[], object] | None = None) -> None:
        self.store = store
        self.calls = calls
        self.outage = outage
        self.spool = spool
        self.fail = fail
        self.rejected = 0
        self.prepared = False
        self.on_prepared = on_prepared
        #: the store inserts ``CallRow``s as they are (``SqlStore``): the writer builds rows for it
        self.takes_rows = getattr(store, "takes_rows", False) is True

    def store_batch(self, batch: Sequence[Built], timeout: float | None) -> int | None:
        """How many records of ``batch`` were stored (the rest set aside); None when the store is away."""
        try:
            self._write(batch, timeout)
        except StoreUnavailable as error:
            self.outage.failed(error, self._spool_name())
            return None
        except Exception as exc:
            return self._one_by_one(batch, exc, timeout)
        return len(batch)

    def _write(self, batch: Sequence[Built], timeout: float | None) -> None:
        store = self.store
        if not self.prepared:
            # A store's ``prepare`` (``SqlStore``: SQLAlchemy and Alembic imported) runs once, in the writer's
            # thread, before the first write: loading modules is not the database's time, so not bounded by it.
            self.prepared = True
            prepare = getattr(store, "prepare", None)
            if callable(prepare):
                prepare()
            if self.on_prepared is not None:
                try:
                    self.on_prepared()
                except Exception as exc:
                    self.fail("writer.on_prepared_failed", exc)
        records = batch if self.takes_rows else [as_record(item) for item in batch]
        self.calls.run(lambda: store.write(records), timeout)  # type: ignore[arg-type]

    def _one_by_one(self, batch: Sequence[Built], exc: Exception, timeout: float | None) -> int | None:
        refused: list[tuple[Built, Exception]] = []
        for record in batch:
            try:
                self._write([record], timeout)
            except StoreUnavailable as error:
                self.outage.failed(error, self._spool_name())
                return None
            except Exception as single:
                refused.append((record, single))
        stored = len(batch) - len(refused)
        if not stored and len(batch) > 1:  # every record refused: the store's problem, not the records'
            away = StoreUnavailable(f"the store refuses every record: {type(exc).__name__}: {str(exc)[:200]}")
            self.outage.failed(away, self._spool_name())
            return None
        for record, reason in refused:
            self._set_aside(record, reason)
        return stored

    def _set_aside(self, record: Built, error: Exception) -> None:
        text = str(error).splitlines()
        reason = f"{type(error).__name__}: {text[0][:300] if text else ''}"
        kept = None
        if self.spool is not None:
            try:
                kept = str(self.spool.reject(record, reason))
            except OSError as exc:
                self.fail("writer.spool_failed", exc, spool=self._spool_name())
        self.rejected += 1
        self.fail("writer.record_rejected", error, id=record.id, session_id=record.session_id, kept=kept)

    def _spool_name(self) -> str | None:
        return str(self.spool.active_path) if self.spool is not None else None
