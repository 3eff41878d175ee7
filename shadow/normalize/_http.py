"""Provider error normalizers: HTTP statuses and headers, SDK exceptions and MCP error texts, as ``shadow.Rules``."""

from __future__ import annotations

import datetime as dt
import email.utils
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from shadow.contract._codes import Code
from shadow.contract._payloads import ToolError
from shadow.contract._rules import ExceptionRule, ResultRule, Rules, error_text
from shadow.normalize._mcp import JSONRPC_CODES, MCP_PREFIX, mcp, mcp_error_value, tool_text_value

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


def _response_body(response: object) -> object:
    """A response's JSON body (or text) when small and already read; None otherwise (never reads a stream)."""
    if getattr(response, "_content", None) is False:
        return None  # a streamed requests.Response: .content would read the network
    try:
        content = getattr(response, "content", None)
    except Exception:  # httpx raises ResponseNotRead for a streamed body
        return None
    if not isinstance(content, bytes) or len(content) > _MAX_BODY_BYTES:
        return None
    try:
        return json.loads(content)
    except ValueError:
        return content.decode("utf-8", "replace")


def _provider_of(response: object) -> str | None:
    request = getattr(response, "request", None)
    url = str(getattr(request, "url", None) or getattr(response, "url", "") or "")
    if "api.openai.com" in url:
        return "openai"
    if "api.anthropic.com" in url:
        return "anthropic"
    return None


def _status_of_response(response: object) -> int | None:
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool) and 400 <= status <= 599:
        return status
    return None


def facts_of_response(response: object, provider: str | None = None) -> HttpFacts | None:
    """The facts of an httpx/httpx2/requests response with an error status; None for anything else."""
    status = _status_of_response(response)
    if status is None:
        return None
    return HttpFacts(status, getattr(response, "headers", None), _response_body(response),
                     provider or _provider_of(response))


# ---------------------------------------------------------------- the SDK families


@dataclass(frozen=True, slots=True)
class _Family:
    name: str
    status: tuple[type[BaseException], ...]
    timeout: tuple[type[BaseException], ...]
    connection: tuple[type[BaseException], ...]
    provider: str | None = None


def _load(module: str, *names: str) -> tuple[type[BaseException], ...]:
    try:
        loaded = __import__(module, fromlist=list(names))
    except ImportError:
        return ()
    return tuple(cls for n in names if isinstance(cls := getattr(loaded, n, None), type)
                 and issubclass(cls, BaseException))


def families() -> list[_Family]:
    """The installed HTTP client and provider SDK families (httpx, httpx2, requests, openai, anthropic)."""
    found: list[_Family] = []
    for module in ("httpx", "httpx2"):
        status = _load(module, "HTTPStatusError")
        if status:
            found.append(_Family(module, status, _load(module, "TimeoutException"),
                                 _load(module, "NetworkError", "RemoteProtocolError", "ProxyError")))
    requests_status = _load("requests", "HTTPError")
    if requests_status:
        found.append(_Family("requests", requests_status, _load("requests", "Timeout"),
                             _load("requests", "ConnectionError")))
    for provider in ("openai", "anthropic"):
        status = _load(provider, "APIStatusError")
        if status:
            found.append(_Family(provider, status, _load(provider, "APITimeoutError"),
                                 _load(provider, "APIConnectionError"), provider))
    return found


def facts_of_exception(exc: BaseException, provider: str | None = None) -> HttpFacts | None:
    """The HTTP facts an SDK status exception carries (its response, and the parsed body the SDK kept)."""
    response = getattr(exc, "response", None)
    status = _status_of_response(response)
    if status is None:
        code = getattr(exc, "status_code", None)
        if not isinstance(code, int) or isinstance(code, bool) or not 400 <= code <= 599:
            return None
        status = code
    body = getattr(exc, "body", None)
    if body is None and response is not None:
        body = _response_body(response)
    return HttpFacts(status, getattr(response, "headers", None), body,
                     provider or (_provider_of(response) if response is not None else None))


def _exception_rules(family: _Family) -> list[ExceptionRule]:
    rules: list[ExceptionRule] = []
    if family.timeout:
        rules.append(ExceptionRule(family.timeout, Code.UPSTREAM_TIMEOUT, _TIMEOUT_MESSAGE,
                                   name=f"{family.name}:timeout"))
    if family.status:
        for code in dict.fromkeys([*_MESSAGES, Code.PAYLOAD_TOO_LARGE]):
            rules.append(_status_rule(family, code))
    if family.connection:
        rules.append(ExceptionRule(family.connection, Code.UPSTREAM_UNAVAILABLE, _CONNECTION_MESSAGE,
                                   name=f"{family.name}:connection"))
    return rules


def _classified(
    facts: Callable[[Any], HttpFacts | None], code: Code, name: str
) -> tuple[Callable[[Any], bool], Callable[[Any], str], Callable[[Any], dict[str, Any]]]:
    """A rule's match, message and context for ``code``, all read from ``classify(facts(source))``."""

    def matches(source: Any) -> bool:
        found = facts(source)
        return found is not None and classify(found)[0] is code

    def message(source: Any) -> str:
        found = facts(source)
        assert found is not None
        return classify(found)[1]

    def context(source: Any) -> dict[str, Any]:
        found = facts(source)
        return classify(found)[2] if found is not None else {}

    matches.__name__ = name
    return matches, message, context


def _status_rule(family: _Family, code: Code) -> ExceptionRule:
    classes, provider = family.status, family.provider

    def facts(exc: BaseException) -> HttpFacts | None:
        return facts_of_exception(exc, provider) if isinstance(exc, classes) else None

    name = f"{family.name}:{code.value}"
    matches, message, context = _classified(facts, code, name)
    return ExceptionRule(matches, code, message, context, name=name)


def _is_response(value: object) -> bool:
    return (not isinstance(value, Mapping) and _status_of_response(value) is not None
            and hasattr(value, "headers"))


def _value_facts(value: object) -> HttpFacts | None:
    """Facts of a returned response object, or of a response-shaped dict with ``status`` and ``headers``."""
    if _is_response(value):
        return facts_of_response(value)
    if isinstance(value, Mapping) and "headers" in value:
        status = value.get("status", value.get("status_code"))
        if isinstance(status, int) and not isinstance(status, bool) and 400 <= status <= 599:
            return HttpFacts(status, value.get("headers"), value.get("body", value.get("error")))
    return None


def _result_rule(code: Code) -> ResultRule:
    name = f"http-response:{code.value}"
    matches, message, context = _classified(_value_facts, code, name)
    return ResultRule(matches, code, message, context, name=name)


def http() -> Rules:
    """Rules for HTTP refusals and failures: the exceptions of httpx, requests, OpenAI and Anthropic SDKs
    (whichever are installed), and returned error responses (``httpx.Response``, ``requests.Response``, or a
    dict with ``status`` and ``headers``).

    ``Rules.default() + shadow.normalize.http()`` maps these exceptions and responses exactly as
    ``http() + Rules.default()`` does (no built-in rule claims them); put ``http()`` first when its reading of
    response-shaped dicts (the 429 quota split, ``Retry-After``) should win over the built-in status rules.
    """
    exception_rules = [rule for family in families() for rule in _exception_rules(family)]
    result_rules = [_result_rule(code) for code in dict.fromkeys([*_MESSAGES, Code.PAYLOAD_TOO_LARGE])]
    return Rules(exception_rules, result_rules)


__all__ = [
    "JSONRPC_CODES", "MCP_PREFIX", "QUOTA_CODES", "TOO_LARGE_PART", "HttpFacts", "classify", "facts_of_exception",
    "facts_of_response", "families", "http", "is_quota", "mcp", "mcp_error_value", "response_error", "retry_after_ms",
    "tool_text_value",
]
