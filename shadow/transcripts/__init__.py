"""``shadow import``: agent transcripts (chat formats, OpenTelemetry spans) into the call log."""

from __future__ import annotations

from shadow.transcripts._chat import parse_chat
from shadow.transcripts._formats import FormatError
from shadow.transcripts._importer import ImportOptions, Summary, import_files
from shadow.transcripts._otel import parse_otel

__all__ = [
    "FormatError",
    "ImportOptions",
    "Summary",
    "import_files",
    "parse_chat",
    "parse_otel",
]
