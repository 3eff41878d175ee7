"""The writer's view of the store's health: up, or down until the next probe, with exponential backoff."""

from __future__ import annotations

import time

from shadow._logs import get_logger

log = get_logger("shadow.writer")


class StoreUnavailable(Exception):
    """The database cannot be reached, is locked, or cannot write now; the writer spools and retries later."""


class ExitDeadline(StoreUnavailable):
    """At exit, the time left ran out before the store answered: the store may well be up (not an outage)."""


class Outage:
    """Whether the store is down, and when to probe it next (``initial`` doubling up to ``maximum`` seconds)."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.initial = initial
        self.maximum = maximum
        self.down = False
        self.delay = initial
        self.next_probe = 0.0
        self.since = 0.0
        self.attempts = 0  # writes tried (a flush waits for one after it began)

    def probe_due(self) -> bool:
        """Whether a write may be tried now: the store is up, or its next probe is due."""
        return not self.down or time.monotonic() >= self.next_probe

    def probe_now(self) -> None:
        """Allow the next write at once (at exit: one more try before giving up)."""
        self.next_probe = 0.0

    def failed(self, error: BaseException, spool: str | None) -> None:
        """A write found the store unavailable: back off (logged once per outage)."""
        now = time.monotonic()
        self.attempts += 1
        if not self.down:
            if isinstance(error, ExitDeadline):  # no outage to warn of: what is left goes to the spool
                log.info("writer.exit_deadline", error=str(error)[:300], spool=spool)
            else:
                log.warning("writer.store_unavailable", error=str(error)[:300], spool=spool)
            self.delay = self.initial
            self.since = now
        else:
            self.delay = min(self.delay * 2, self.maximum)
        self.down = True
        self.next_probe = now + self.delay

    def succeeded(self, **fields: object) -> bool:
        """A write went through; True when that ends an outage (logged)."""
        was_down = self.down
        self.attempts += 1
        if was_down:
            log.info("writer.store_back", down_s=round(time.monotonic() - self.since, 3), **fields)
        self.down = False
        self.delay = self.initial
        return was_down

    def wait_hint(self, interval: float) -> float:
        """Seconds the writer thread may sleep before the next probe is due (at most ``interval``)."""
        return max(0.0, min(interval, self.next_probe - time.monotonic()))
