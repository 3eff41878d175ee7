"""The Protocols shadow's pluggable parts implement: flag sources, stores, deferred records, chat clients."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from shadow.calllog._records import Record
    from shadow.eval._client import Reply
    from shadow.flags._model import FlagState

__all__ = ["ChatClient", "Deferred", "FlagSource", "Store"]


@runtime_checkable
class FlagSource(Protocol):
    """Where the adapter reads flags: must answer from memory (the hot path never waits on I/O)."""

    def state(self, tool: str) -> FlagState:
        """The flag of ``tool`` (legacy when unknown or when the kill switch is on)."""
        ...


class Store(Protocol):
    """A destination for call records."""

    def write(self, records: Sequence[Record]) -> None:
        """Insert ``records``; a record whose id is stored already is skipped (idempotent).

        Raises ``StoreUnavailable`` when the database cannot be reached or is locked; any other exception means the
        records themselves were refused.
        """
        ...


class Deferred(Protocol):
    """Work the writer thread finishes off the hot path: building the record from raw values."""

    def build(self) -> Record:
        """Build the record (may raise; the writer logs, counts and drops such an item)."""
        ...


class ChatClient(Protocol):
    """Anything that answers a chat completions request body."""

    def complete(self, body: Mapping[str, Any]) -> Reply:
        """Send ``body`` and return the reply, or raise ``EndpointError``."""
        ...
