"""Calls made before the flags were loaded: served legacy, captured, and resolved by the writer thread."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Final

from shadow import _sessions as sessions
from shadow._fingerprint import safe_name
from shadow._ids import new_id
from shadow._logs import get_logger
from shadow.calllog._direct import pid as _pid
from shadow.calllog._pending import PendingCall
from shadow.calllog._records import MarkRecord, Record
from shadow.flags import _db as flagmod
from shadow.flags._db import Mode
from shadow.typing import FlagSource

log = get_logger("shadow.adapter")

#: Seconds the writer thread waits for the flags to resolve a call made before they were loaded.
_PROVISIONAL_WAIT: Final = 10.0


@dataclass(frozen=True, slots=True)
class ProvisionalCall:
    """A call made before the flags were loaded, served legacy; the writer resolves its flag, then builds it.

    A tool whose flag turns out to be ``legacy`` becomes an ``unlogged`` mark, which only keeps the session's
    sequence numbers consecutive (a gap would mean lost records); otherwise the call is logged under its mode
    (a ``cutover`` tool's call served legacy in that window is truthfully a legacy-arm call).
    """

    call: PendingCall
    provisional: FlagSource

    def build(self) -> Record:
        """The call record, or the ``unlogged`` mark of a legacy tool."""
        call = self.call
        if not flagmod.wait_for(self.provisional, _PROVISIONAL_WAIT):
            log.warning("flags_not_loaded", tool=call.spec.name, waited_s=_PROVISIONAL_WAIT)
        mode = self.provisional.state(call.spec.name).mode
        if mode is not Mode.LEGACY:
            return dataclasses.replace(call, mode=mode).build()
        return MarkRecord(id=new_id(), session_id=safe_name(call.session_id), seq=call.seq,
                          ts=dt.datetime.fromtimestamp(call.started_ns / 1e9, dt.UTC), kind="unlogged",
                          process=_pid(), host=sessions.HOST, source=call.spec.source, epoch=call.epoch)
