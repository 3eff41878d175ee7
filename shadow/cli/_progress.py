"""Progress for long steps that shows when nobody watches a terminal: a plain line every few seconds."""

from __future__ import annotations

import threading
import time
from typing import Final, TextIO

#: Seconds between progress lines when the output is not a terminal.
EVERY: Final = 5.0


class LineProgress:
    """Prints ``label: done/total (n%)`` at most every ``every`` seconds, and for a step without counts
    (``step("syncing the warehouse")``) a line when it starts and "still ..." lines while it lasts.

    Meant for piped output (CI logs, ``| tee``), where a progress bar prints nothing until the end.
    """

    def __init__(self, stream: TextIO, *, every: float = EVERY) -> None:
        self._stream, self._every = stream, every
        self._lock = threading.Lock()
        self._label = ""
        self._total = self._done = 0
        self._last = 0.0
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _say(self, text: str) -> None:
        with self._lock:
            self._stream.write(text + "\n")
            self._stream.flush()

    def count(self, label: str, total: int) -> None:
        """Start a counted step of ``total`` items."""
        self._end_heartbeat()
        self._label, self._total, self._done = label, total, 0
        self._last = time.monotonic()
        self._say(f"{label}: 0/{total:,}")

    def update(self, n: int = 1, *, total: int | None = None) -> None:
        """``n`` more items of the counted step are done; ``total``, when given, is the step's total from now on
        (it grows when items arrive during the step)."""
        self._done += n
        if total is not None:
            self._total = total
        now = time.monotonic()
        if now - self._last >= self._every or self._done >= self._total:
            self._last = now
            share = self._done / self._total if self._total else 1.0
            self._say(f"{self._label}: {self._done:,}/{self._total:,} ({share:.0%})")

    def step(self, label: str) -> None:
        """Start a step without counts: say so now, and every ``every`` seconds until the next step or ``close``."""
        self._end_heartbeat()
        self._say(f"{label} ...")
        started = time.monotonic()
        self._stop = threading.Event()

        def beat(stop: threading.Event) -> None:
            while not stop.wait(self._every):
                self._say(f"  still {label} ({time.monotonic() - started:.0f} s)")

        self._thread = threading.Thread(target=beat, args=(self._stop,), name="shadow-progress", daemon=True)
        self._thread.start()

    def _end_heartbeat(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None

    def close(self) -> None:
        """End the current step."""
        self._end_heartbeat()
