"""``shadow import``: agent transcripts (chat formats, OpenTelemetry spans) into the call log.

Each name is imported on first use (PEP 562): the command line's import of ``FormatError`` loads no SQLAlchemy,
which only the importer's writes need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadow._lazy import lazy_names

if TYPE_CHECKING:
    from shadow.transcripts._chat import parse_chat
    from shadow.transcripts._formats import FormatError
    from shadow.transcripts._importer import ImportOptions, Summary, import_files
    from shadow.transcripts._otel import parse_otel

_WHERE = {
    "FormatError": "shadow.transcripts._formats",
    "ImportOptions": "shadow.transcripts._importer",
    "Summary": "shadow.transcripts._importer",
    "import_files": "shadow.transcripts._importer",
    "parse_chat": "shadow.transcripts._chat",
    "parse_otel": "shadow.transcripts._otel",
}

__all__ = [
    "FormatError",
    "ImportOptions",
    "Summary",
    "import_files",
    "parse_chat",
    "parse_otel",
]

__getattr__ = lazy_names(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(__all__)
