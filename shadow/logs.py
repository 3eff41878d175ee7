"""Operational logging: structlog, JSON lines when stderr is not a terminal, unless the application configured it."""

from __future__ import annotations

import logging
import os
import sys
from typing import Final

import structlog

LEVEL_ENV: Final = "SHADOW_LOG_LEVEL"
_configured_by_us = False


def setup(level: str | None = None, *, force: bool = False) -> None:
    """Configure structlog for shadow's events, unless the application already did (or ``force``).

    Events go to stderr: JSON lines when stderr is not a terminal, readable lines when it is. The level comes from
    ``level``, else ``SHADOW_LOG_LEVEL``, else INFO.
    """
    global _configured_by_us
    if structlog.is_configured() and not (force or _configured_by_us):
        return
    name = (level or os.environ.get(LEVEL_ENV) or "INFO").upper()
    number = logging.getLevelName(name)
    if not isinstance(number, int):
        raise ValueError(f"{LEVEL_ENV}={name!r} is not a log level; use DEBUG, INFO, WARNING or ERROR")
    tty = sys.stderr.isatty()
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer(colors=False) if tty else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _exceptions(tty),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(number),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    _configured_by_us = True


def _exceptions(tty: bool) -> structlog.typing.Processor:
    if tty:
        return structlog.dev.set_exc_info
    # Structured tracebacks without local variables: locals may hold secrets.
    return structlog.processors.ExceptionRenderer(structlog.tracebacks.ExceptionDictTransformer(show_locals=False))
