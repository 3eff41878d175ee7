"""Reading an HTTP refusal: its status, headers and body as a code, a message and context (``classify``)."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from shadow.contract._codes import Code
from shadow.contract._payloads import ToolError
from shadow.contract._rules import error_text

#: The part of a request each "too large" status names.
TOO_LARGE_PART: Final = {413: "body", 414: "uri", 431: "headers"}

#: Error codes and types providers use for an exhausted quota or spending limit (never worth a blind retry).
QUOTA_CODES: Final = frozenset({
    "insufficient_quota", "billing_hard_limit_reached", "quota_exceeded", "billing_error",
    "enforced_spend_limit_reached", "contract_spend_limit_reached", "linked_organization_spend_limit_reached",
    "storage_quota_exceeded", "payment_required",
})
_QUOTA_TEXT = re.compile(
    r"quota|billing|spend(?:ing)?[ _]limit|credit balance|insufficient[ _]funds|usage limit|payment required",
    re.IGNORECASE,
)
_CONTEXT_CODES: Final = frozenset({"context_length_exceeded", "string_above_max_length", "request_too_large"})
_HEADER_NAME = re.compile(r"\b(cookie|authorization|referer|user-agent|x-[a-z0-9-]+)\b", re.IGNORECASE)
_MAX_BODY_BYTES: Final = 65536
_MAX_RETRY_AFTER_MS: Final = 7 * 24 * 3600 * 1000

_STATUS_CODES: Final[dict[int, Code]] = {
    400: Code.VALIDATION_ERROR, 401: Code.UNAUTHENTICATED, 402: Code.QUOTA_EXCEEDED, 403: Code.PERMISSION_DENIED,
    404: Code.NOT_FOUND, 405: Code.NOT_IMPLEMENTED, 406: Code.UNSUPPORTED_INPUT, 408: Code.UPSTREAM_TIMEOUT,
    409: Code.CONFLICT, 410: Code.NOT_FOUND, 411: Code.VALIDATION_ERROR, 412: Code.FAILED_PRECONDITION,
    413: Code.PAYLOAD_TOO_LARGE, 414: Code.PAYLOAD_TOO_LARGE, 415: Code.UNSUPPORTED_INPUT, 422: Code.VALIDATION_ERROR,
    423: Code.CONFLICT, 424: Code.FAILED_PRECONDITION, 428: Code.FAILED_PRECONDITION, 429: Code.RATE_LIMITED,
    431: Code.PAYLOAD_TOO_LARGE, 499: Code.CANCELLED, 501: Code.NOT_IMPLEMENTED, 504: Code.UPSTREAM_TIMEOUT,
    524: Code.UPSTREAM_TIMEOUT,
}

_MESSAGES: Final[dict[Code, str]] = {
    Code.VALIDATION_ERROR: "The service rejected the request as invalid (HTTP {status}). Correct the arguments, "
                           "for example the field named in context.",
    Code.UNAUTHENTICATED: "The service did not accept this tool's credentials (HTTP {status}). Ask the user to check "
                          "them, for example to renew the API key.",
    Code.QUOTA_EXCEEDED: "The account's quota or spending limit with the service is used up. Tell the user, for "
                         "example to raise the limit or wait for the next billing period.",
    Code.PERMISSION_DENIED: "The service refused access to this resource (HTTP {status}). Ask the user for access "
                            "instead of retrying, for example a role that allows it.",
    Code.NOT_FOUND: "The service found nothing under the requested name or id (HTTP {status}). Check the "
                    "identifier, for example by listing what exists first.",
    Code.NOT_IMPLEMENTED: "The service does not support this operation (HTTP {status}). Use a different tool or "
                          "tell the user, for example that the feature is missing.",
    Code.UNSUPPORTED_INPUT: "The service does not accept this kind of content (HTTP {status}). Send a supported "
                            "format, for example JSON or plain UTF-8 text.",
    Code.UPSTREAM_TIMEOUT: "The service this tool depends on did not answer in time (HTTP {status}). Make the "
                           "identical call again, for example after a short pause.",
    Code.CONFLICT: "The request conflicts with the current state of the resource (HTTP {status}). Read it again and "
                   "retry with the fresh state, for example the latest version.",
    Code.FAILED_PRECONDITION: "A precondition of the request does not hold (HTTP {status}). Fetch the current state "
                              "first, for example the latest version or ETag.",
    Code.RATE_LIMITED: "The service is rate limiting these requests. Wait and make the identical call again, for "
                       "example after a few seconds.",
    Code.CANCELLED: "The request was cancelled before the service answered. Tell the user, for example that the "
                    "task was stopped.",
    Code.UPSTREAM_UNAVAILABLE: "The service this tool depends on failed or is overloaded (HTTP {status}). Make the "
                               "identical call again shortly, for example after a few seconds.",
}
_TOO_LARGE_MESSAGES: Final = {
    "body": "The request body is too large for the service. Send a smaller input, for example fewer items per call.",
    "uri": "The request URL is too long for the service. Send shorter arguments, for example fewer or shorter "
           "query values.",
    "headers": "The request headers are too large for the service. Ask the user to check them, for example an "
               "oversized cookie or token.",
    "context_window": "The input is longer than the model's context window allows. Send less, for example a shorter "
                      "text or fewer messages.",
    "field": "A value in the request is longer than the service allows. Shorten it, for example the field named in "
             "context.",
}
_TIMEOUT_MESSAGE: Final = ("A service this tool depends on did not answer in time. Make the identical call again, "
                           "for example after a short pause.")
_CONNECTION_MESSAGE: Final = ("A service this tool depends on could not be reached. Make the identical call again "
                              "shortly, for example after a few seconds.")


# ---------------------------------------------------------------- reading a response


def _header(headers: object, name: str) -> str | None:
    if headers is None:
        return None
    getter = getattr(headers, "get", None)
    if getter is None:
        return None
    found = getter(name)
    if found is None and isinstance(headers, Mapping):
        wanted = name.lower()
        found = next((v for k, v in headers.items() if isinstance(k, str) and k.lower() == wanted), None)
    return str(found) if found is not None else None


def retry_after_ms(headers: object, *, now: dt.datetime | None = None) -> int | None:
    """Milliseconds to wait from ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``; None if absent."""
    raw_ms = _header(headers, "retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return min(math.ceil(value), _MAX_RETRY_AFTER_MS)
    raw = _header(headers, "retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            import email.utils  # here, not on import: few responses carry an HTTP-date

            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        seconds = (when - (now or dt.datetime.now(dt.UTC))).total_seconds()
        return min(max(0, math.ceil(seconds * 1000)), _MAX_RETRY_AFTER_MS)
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return min(math.ceil(seconds * 1000), _MAX_RETRY_AFTER_MS)


def _inner(body: object) -> Mapping[str, Any]:
    """The error object of a provider body: ``{"error": {...}}`` or the object itself."""
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            return inner
        return body
    return {}


def _codes_in(body: object) -> set[str]:
    inner = _inner(body)
    found: set[str] = set()
    for key in ("code", "type", "status", "reason"):
        item = inner.get(key)
        if isinstance(item, str):
            found.add(item.lower())
    details = inner.get("details")
    if isinstance(details, Mapping) and isinstance(details.get("error_code"), str):
        found.add(str(details["error_code"]).lower())
    return found


def _body_text(body: object) -> str:
    if isinstance(body, str | bytes):
        return body[:4096] if isinstance(body, str) else body[:4096].decode("utf-8", "replace")
    return error_text(_inner(body)) or error_text(body) or ""


def is_quota(status: int, headers: object, body: object, provider: str | None = None) -> bool:
    """Whether a refusal is an exhausted quota or spending limit rather than a passing rate limit."""
    codes = _codes_in(body)
    if codes & QUOTA_CODES or any("spend_limit" in c or "quota" in c for c in codes):
        return True
    if _QUOTA_TEXT.search(_body_text(body)):
        return True
    # Anthropic's spend-limit 429 carries no retry-after; its passing rate limits always do.
    return provider == "anthropic" and status == 429 and retry_after_ms(headers) is None


@dataclass(frozen=True, slots=True)
class HttpFacts:
    """What an HTTP refusal says: the status, its headers, the parsed body and the provider, when known."""

    status: int
    headers: object = None
    body: object = None
    provider: str | None = None


def classify(facts: HttpFacts) -> tuple[Code, str, dict[str, Any]]:
    """The code, message and context for an HTTP refusal."""
    status = facts.status
    context: dict[str, Any] = {"status": status}
    wait = retry_after_ms(facts.headers)
    if wait is not None:
        context["retry_after_ms"] = wait
    codes = _codes_in(facts.body)
    param = _inner(facts.body).get("param")
    if isinstance(param, str) and param:
        context["field"] = param[:200]
    if status in (400, 402, 403, 429) and is_quota(status, facts.headers, facts.body, facts.provider):
        context.pop("retry_after_ms", None)
        return Code.QUOTA_EXCEEDED, _MESSAGES[Code.QUOTA_EXCEEDED], context
    if codes & _CONTEXT_CODES or status in TOO_LARGE_PART:
        if "context_length_exceeded" in codes:
            part = "context_window"
        elif "string_above_max_length" in codes and "field" in context:
            part = "field"
        else:
            part = TOO_LARGE_PART.get(status, "body")
        context["part"] = part
        if part == "headers":
            named = _HEADER_NAME.search(_body_text(facts.body))
            if named:
                context["header"] = named.group(1).lower()
        return Code.PAYLOAD_TOO_LARGE, _TOO_LARGE_MESSAGES[part], context
    code = _STATUS_CODES.get(status)
    if code is None:
        code = Code.UPSTREAM_UNAVAILABLE if status >= 500 else Code.VALIDATION_ERROR
    if "overloaded_error" in codes:
        code = Code.UPSTREAM_UNAVAILABLE
    if code is Code.RATE_LIMITED and wait is not None:
        seconds = max(1, math.ceil(wait / 1000))
        return code, (f"The service is rate limiting these requests. Make the identical call again after waiting, "
                      f"for example {seconds} s as context.retry_after_ms says."), context
    return code, _MESSAGES[code].format(status=status), context


def response_error(
    status: int, headers: object = None, body: object = None, *, provider: str | None = None,
    idempotent: bool = True,
) -> ToolError:
    """The structured error for an HTTP refusal: ``response_error(429, {"Retry-After": "3"})``."""
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise ValueError(f"status must be an HTTP error status from 400 to 599, not {status!r}")
    code, message, context = classify(HttpFacts(status, headers, body, provider))
    return ToolError.of(code, message, idempotent=idempotent, context=context)
