"""Serving the dashboard on localhost: rebuilt on a request at most every ``refresh`` seconds, with a strict CSP."""

from __future__ import annotations

import html
import http.server
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from shadow._logs import get_logger

log = get_logger("shadow.dashboard")

PATHS: Final = ("/", "/index.html", "/cutover.html")


class DashboardServer:
    """Serves the page on ``host:port`` (default loopback only); rebuilt on a request at most every ``refresh``
    seconds (0: never), the last good page kept when a rebuild fails."""

    def __init__(self, build: Callable[[], str], *, host: str = "127.0.0.1", port: int = 8050,
                 refresh: float = 60.0, page: str | None = None) -> None:
        if refresh < 0:
            raise ValueError(f"refresh must be 0 (never) or a number of seconds, not {refresh}")
        self._build, self._refresh = build, refresh
        self._lock = threading.Lock()
        self._page: bytes | None = page.encode() if page is not None else None
        self._built = time.monotonic() if page is not None else 0.0
        self._csp: str = _header_csp(page) if page is not None else "default-src 'none'"
        handler = _handler(self)
        self.httpd = http.server.ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True

    @property
    def url(self) -> str:
        """Where the page is served."""
        host, port = self.httpd.server_address[:2]
        shown = "localhost" if host in ("127.0.0.1", "::1") else host
        return f"http://{shown!s}:{port}/"

    def page(self) -> tuple[bytes, str]:
        """The current page and its CSP, rebuilt first when it is older than ``refresh`` seconds."""
        with self._lock:
            stale = self._page is None or (self._refresh > 0 and time.monotonic() - self._built >= self._refresh)
            if stale:
                try:
                    text = self._build()
                except Exception as exc:
                    log.warning("dashboard_rebuild_failed", error=f"{type(exc).__name__}: {exc}")
                    if self._page is None:
                        raise
                else:
                    self._page, self._csp = text.encode(), _header_csp(text)
                    self._built = time.monotonic()
            assert self._page is not None
            return self._page, self._csp

    def serve_forever(self) -> None:
        """Serve until ``shutdown()`` (or Ctrl-C in the caller)."""
        self.httpd.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        """Stop ``serve_forever`` and close the socket."""
        self.httpd.shutdown()
        self.httpd.server_close()


def _header_csp(page: str) -> str:
    start = page.find('http-equiv="Content-Security-Policy" content="')
    if start < 0:
        return "default-src 'none'"
    start += len('http-equiv="Content-Security-Policy" content="')
    return html.unescape(page[start:page.index('"', start)]) + "; frame-ancestors 'none'"


def _handler(server: DashboardServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "shadow-dashboard"
        sys_version = ""

        def _send(self, status: int, body: bytes, content_type: str, csp: str, head: bool) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", csp)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _answer(self, head: bool) -> None:
            path = self.path.split("?", 1)[0]
            if path not in PATHS:
                self._send(404, b"not found: the dashboard is at /\n", "text/plain; charset=utf-8",
                           "default-src 'none'", head)
                return
            try:
                body, csp = server.page()
            except Exception:
                self._send(503, b"the dashboard could not be built; see the server's log\n",
                           "text/plain; charset=utf-8", "default-src 'none'", head)
                return
            self._send(200, body, "text/html; charset=utf-8", csp, head)

        def do_GET(self) -> None:
            self._answer(head=False)

        def do_HEAD(self) -> None:
            self._answer(head=True)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("dashboard_request", client=self.client_address[0], line=format % args)

    return Handler


def serve(build: Callable[[], str], *, host: str = "127.0.0.1", port: int = 8050, refresh: float = 60.0,
          page: str | None = None) -> DashboardServer:
    """A server for the dashboard (not started: call ``serve_forever``); ``port=0`` picks a free port."""
    return DashboardServer(build, host=host, port=port, refresh=refresh, page=page)
