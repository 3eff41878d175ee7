"""A small client for an OpenAI-compatible ``/chat/completions`` endpoint, on the standard library only.

Timeouts on every request; bounded retries with exponential backoff on 429, 5xx and connection failures (a
``Retry-After`` header is honoured up to a cap); a clear ``EndpointError`` when the endpoint cannot be used.
The API key travels only in the ``Authorization`` header: it is never recorded or shown.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from shadow._redact import scrub_text
from shadow.normalize._http import retry_after_ms

#: Statuses worth another try besides every 5xx (as the OpenAI SDKs do): timeout, lock conflict, too early, 429.
RETRY_STATUSES: Final = frozenset({408, 409, 425, 429})
PATH: Final = "/chat/completions"


class EndpointError(Exception):
    """The endpoint could not be used; the message says what to fix. ``unavailable`` when it was unreachable."""

    def __init__(self, message: str, *, status: int | None = None, unavailable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.unavailable = unavailable


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful HTTP exchange: the status and the body as text (which may still be malformed)."""

    status: int
    body: str


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where to send requests and how patiently."""

    base_url: str
    api_key: str | None = None
    api_key_env: str = "OPENAI_API_KEY"  # named in error messages only
    timeout: float = 60.0  # seconds per request
    attempts: int = 4  # tries per request, the first included
    backoff: float = 1.0  # seconds before the second try; doubles each time
    max_wait: float = 30.0  # cap on any single wait, Retry-After included

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(
                f"--base-url {self.base_url!r} is not an http(s) URL; pass the API root, for example "
                "https://api.openai.com/v1 or http://127.0.0.1:8000/v1"
            )
        if self.timeout <= 0 or self.attempts < 1 or self.backoff < 0 or self.max_wait < 0:
            raise ValueError("timeout must be positive, attempts at least 1, backoff and max_wait not negative")

    @property
    def url(self) -> str:
        """The full chat completions URL (``base_url`` may already end with ``/chat/completions``)."""
        base = self.base_url.rstrip("/")
        return base if base.endswith(PATH) else base + PATH


class HttpChatClient:
    """``ChatClient`` over ``urllib``; ``sleep`` is injectable so tests need not wait."""

    def __init__(self, endpoint: Endpoint, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.endpoint = endpoint
        self._sleep = sleep

    def complete(self, body: Mapping[str, Any]) -> Reply:
        """POST ``body``; retry what may pass on a later try; raise ``EndpointError`` on what will not."""
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "shadow-eval"}
        if self.endpoint.api_key:
            headers["Authorization"] = f"Bearer {self.endpoint.api_key}"
        last = ""
        for attempt in range(1, self.endpoint.attempts + 1):
            request = urllib.request.Request(self.endpoint.url, data=data, headers=headers, method="POST")
            wait: float | None = None
            try:
                with urllib.request.urlopen(request, timeout=self.endpoint.timeout) as response:
                    text = response.read().decode("utf-8", "replace")
                    return Reply(int(response.status), text)
            except urllib.error.HTTPError as exc:
                text = _read(exc)
                if exc.code not in RETRY_STATUSES and exc.code < 500:
                    raise EndpointError(self._explain(exc.code, text), status=exc.code) from None
                last = f"HTTP {exc.code}{_excerpt(text)}"
                wait_ms = retry_after_ms(exc.headers)
                wait = wait_ms / 1000 if wait_ms is not None else None
            except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException, OSError) as exc:
                last = _network_reason(exc)
            if attempt < self.endpoint.attempts:
                delay = self.endpoint.backoff * 2 ** (attempt - 1) if wait is None else wait
                self._sleep(min(delay, self.endpoint.max_wait))
        raise EndpointError(
            f"{self.endpoint.url} failed {self.endpoint.attempts} times, last with {last}; check that the "
            "endpoint is up and --base-url is right, or try again later",
            unavailable=True,
        )

    def _explain(self, status: int, text: str) -> str:
        url = self.endpoint.url
        if status in (401, 403):
            where = (
                f"the key in ${self.endpoint.api_key_env}" if self.endpoint.api_key
                else f"no key (${self.endpoint.api_key_env} is not set)"
            )
            return (
                f"HTTP {status} from {url}: the endpoint refused {where}{_excerpt(text)}; set a valid key in "
                f"${self.endpoint.api_key_env} or name another variable with --api-key-env"
            )
        if status == 404:
            return (
                f"HTTP 404 from {url}{_excerpt(text)}; check --base-url (the API root before /chat/completions, for "
                "example https://api.openai.com/v1) and --model"
            )
        return f"HTTP {status} from {url}{_excerpt(text)}; check --model and what the endpoint supports"


def _read(exc: urllib.error.HTTPError) -> str:
    try:
        return exc.read().decode("utf-8", "replace")
    except Exception:  # a broken error body must not hide the status
        return ""


def _excerpt(text: str, limit: int = 300) -> str:
    """The server's own error message (OpenAI style ``{"error": {"message"}}``) or the body's start, scrubbed."""
    message: object = None
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        message = message or data.get("message") or data.get("detail")
    shown = str(message) if message else text
    shown = " ".join(scrub_text(shown).split())
    if not shown:
        return ""
    return f" ({shown[:limit]}{'…' if len(shown) > limit else ''})"


def _network_reason(exc: BaseException) -> str:
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, TimeoutError):
        return "a timeout"
    return f"{type(reason).__name__}: {scrub_text(str(reason))}" if str(reason) else type(reason).__name__
