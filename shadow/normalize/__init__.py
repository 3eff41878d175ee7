"""Provider error normalizers as ``shadow.Rules``: HTTP statuses and SDK exceptions, MCP error texts."""

from __future__ import annotations

from shadow.normalize._http import HttpFacts, classify, http, is_quota, response_error, retry_after_ms
from shadow.normalize._mcp import mcp

__all__ = [
    "HttpFacts",
    "classify",
    "http",
    "is_quota",
    "mcp",
    "response_error",
    "retry_after_ms",
]
