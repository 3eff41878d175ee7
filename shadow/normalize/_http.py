"""Provider error normalizers: HTTP statuses and headers, SDK exceptions and MCP error texts, as ``shadow.Rules``."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from shadow.contract._codes import Code
from shadow.contract._rules import ExceptionRule, ResultRule, Rules
from shadow.normalize._classify import (
    _CONNECTION_MESSAGE,
    _MAX_BODY_BYTES,
    _MESSAGES,
    _TIMEOUT_MESSAGE,
    QUOTA_CODES,
    TOO_LARGE_PART,
    HttpFacts,
    classify,
    is_quota,
    response_error,
    retry_after_ms,
)
from shadow.normalize._mcp import JSONRPC_CODES, MCP_PREFIX, mcp, mcp_error_value, tool_text_value


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
