"""``shadow proxy``: a stdio MCP server's tools served to the agent through the flag, every call logged."""

from __future__ import annotations

from shadow.proxy._server import PROXY_RULES, ShadowProxy, proxy_rules, serve
from shadow.proxy._upstream import ProxyStartError, Upstream, UpstreamTimeout, UpstreamUnavailable

__all__ = [
    "PROXY_RULES",
    "ProxyStartError",
    "ShadowProxy",
    "Upstream",
    "UpstreamTimeout",
    "UpstreamUnavailable",
    "proxy_rules",
    "serve",
]
