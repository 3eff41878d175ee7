"""Operational logging through the standard ``logging`` module; shadow configures no logging of its own.

When the application configured structlog, events go through the application's pipeline; otherwise they go to
the stdlib logger of the same name (``shadow.writer``, ...), so the host's handlers, levels and formats apply.
structlog is never imported here: an application that configured it has imported it. The command line sets up
stderr output for itself (``setup_cli``).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sys
from collections.abc import MutableMapping
from typing import Any, Final

LEVEL_ENV: Final = "SHADOW_LOG_LEVEL"
#: The attribute of a ``logging.LogRecord`` that carries the event's fields.
FIELDS: Final = "shadow_fields"


def _fields_text(event: str, fields: MutableMapping[str, Any]) -> str:
    """The stdlib message: the event name, then ``key=value`` for each field."""
    return " ".join([event, *(f"{k}={v!r}" for k, v in fields.items())])


class _Logger:
    """A logger that picks its route per call: the application's structlog, else stdlib ``logging``."""

    __slots__ = ("_name", "_stdlib")

    def __init__(self, name: str) -> None:
        self._name = name
        self._stdlib = logging.getLogger(name)

    def _structlog(self) -> Any:
        structlog = sys.modules.get("structlog")
        if structlog is not None and structlog.is_configured():
            return structlog.get_logger(self._name)
        return None

    def _log(self, level: int, event: str, kw: dict[str, Any], exc_info: Any = None) -> None:
        logger = self._stdlib
        if not logger.isEnabledFor(level):
            return
        exc = kw.pop("exc_info", exc_info)
        logger.log(level, _fields_text(event, kw), exc_info=exc, extra={FIELDS: {"event": event, **kw}})

    def debug(self, event: str, **kw: Any) -> None:
        target = self._structlog()
        if target is not None:
            target.debug(event, **kw)
        else:
            self._log(logging.DEBUG, event, kw)

    def info(self, event: str, **kw: Any) -> None:
        target = self._structlog()
        if target is not None:
            target.info(event, **kw)
        else:
            self._log(logging.INFO, event, kw)

    def warning(self, event: str, **kw: Any) -> None:
        target = self._structlog()
        if target is not None:
            target.warning(event, **kw)
        else:
            self._log(logging.WARNING, event, kw)

    def error(self, event: str, **kw: Any) -> None:
        target = self._structlog()
        if target is not None:
            target.error(event, **kw)
        else:
            self._log(logging.ERROR, event, kw)

    def exception(self, event: str, **kw: Any) -> None:
        target = self._structlog()
        if target is not None:
            target.exception(event, **kw)
        else:
            self._log(logging.ERROR, event, kw, exc_info=True)


def get_logger(name: str) -> _Logger:
    """The logger of one shadow component (``shadow.writer``, ``shadow.flags``, ...)."""
    return _Logger(name)


class _Formatter(logging.Formatter):
    """The CLI's stderr format: JSON lines when stderr is not a terminal, readable lines when it is."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def format(self, record: logging.LogRecord) -> str:
        fields = dict(getattr(record, FIELDS, None) or {"event": record.getMessage()})
        ts = dt.datetime.fromtimestamp(record.created, dt.UTC)
        if self._tty:
            text = f"{ts:%Y-%m-%d %H:%M:%S} [{record.levelname.lower():<8}] {record.getMessage()}"
            return text + ("\n" + self.formatException(record.exc_info) if record.exc_info else "")
        out: dict[str, Any] = {**fields, "level": record.levelname.lower(), "logger": record.name,
                               "timestamp": ts.isoformat()}
        if record.exc_info and record.exc_info[0] is not None:
            # The type only: exception text and locals may carry secrets.
            out["exception"] = record.exc_info[0].__name__
        return json.dumps(out, default=str)


def level_problem(default: str = "WARNING") -> str | None:
    """Why ``SHADOW_LOG_LEVEL`` is not a log level, or None when it is (or is unset)."""
    raw = os.environ.get(LEVEL_ENV)
    if not raw or isinstance(logging.getLevelName(raw.strip().upper()), int):
        return None
    return f"{LEVEL_ENV}={raw!r} is not a log level; for example {LEVEL_ENV}=INFO (DEBUG, INFO, WARNING or ERROR)"


def setup_cli(level: int) -> None:
    """For the ``shadow`` command only: shadow's events to stderr at ``level`` (never called on import)."""
    logger = logging.getLogger("shadow")
    for handler in list(logger.handlers):
        if getattr(handler, "_shadow_cli", False):
            logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter(sys.stderr.isatty()))
    handler._shadow_cli = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
