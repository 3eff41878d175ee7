"""Reading legacy error values: their text, their HTTP-ish status, and whether they read as an error at all."""

from __future__ import annotations

import functools
import json
import re
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from shadow._redact import LEAK_PATTERNS
from shadow.contract._openings import error_string

ValueMatch: TypeAlias = Callable[[Any], bool]

ERROR_KEYS: Final = ("error", "errors", "error_message", "errorMessage", "err", "exception", "fault")
TEXT_KEYS: Final = ("error", "message", "detail", "error_message", "errorMessage", "msg", "reason", "title")
STATUS_KEYS: Final = ("status", "status_code", "statusCode", "http_status", "code")
#: The statuses a ``status_in`` predicate accepts (by the predicate): rules read the status once for a run of them.
STATUS_SETS: Final[weakref.WeakKeyDictionary[Callable[[Any], bool], frozenset[int]]] = weakref.WeakKeyDictionary()


#: A string that is a JSON object naming an error near its start (``json.dumps({"error": ...})`` returned as text).
_JSON_OPEN: Final = re.compile(r"\s*\{")
_JSON_KEY: Final = re.compile(r'"(?:error|errors|error_message|errorMessage|err|exception|fault|ok|success|'
                              r'status)"\s*:')
_JSON_HEAD: Final = 256  # the key is looked for in the text's first characters
_JSON_MAX: Final = 65536  # a longer JSON text is the tool's data, never decoded to be read
_JSON_CACHED: Final = 4096  # shorter texts are decoded once (the same few error texts repeat)


def json_error(text: str) -> Mapping[str, Any] | None:
    """The JSON object a returned text holds when that object reads as an error (``'{"error": "Not found"}'``)."""
    if _JSON_OPEN.match(text) is None or len(text) > _JSON_MAX or _JSON_KEY.search(text, 0, _JSON_HEAD) is None:
        return None
    return _decoded(text) if len(text) <= _JSON_CACHED else _decode(text)


def _decode(text: str) -> Mapping[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) and looks_like_error(value) else None


_decoded: Final = functools.lru_cache(maxsize=256)(_decode)


def error_text(value: object) -> str | None:
    """The human text of a legacy error value (a string, or the message field of a dict or of a JSON object
    returned as text), if any."""
    if isinstance(value, str):
        decoded = json_error(value)
        return value if decoded is None else error_text(decoded)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, Mapping):
        if "content" in value and (text := content_text(value)) is not None:
            return text
        for key in TEXT_KEYS:
            item = value.get(key)
            if isinstance(item, str) and item:
                return item
            if isinstance(item, Mapping):
                inner = error_text(item)
                if inner:
                    return inner
        errors = value.get("errors")
        if isinstance(errors, list) and errors:
            return error_text(errors[0])
    return None


#: Keys beside an error's text that say more about it (``{"error": "refund exceeds captured amount", "detail":
#: "547.01 > 129.34"}``, ``{"error": "invalid_grant", "error_description": "Token expired"}``): the model read them
#: in legacy, so the served message keeps the first after the text (``fit_message`` then bounds the whole).
_DETAIL_KEYS: Final = ("message", "detail", "details", "error_description", "description", "hint", "reason",
                       "suggestion")
_MAX_DETAIL: Final = 4096


def author_text(value: object) -> str | None:
    """``error_text`` with what a sibling key adds to it (``detail``, ``hint``, ...): the words the model read."""
    text = error_text(value)
    if not text or not isinstance(value, Mapping):
        return text
    inner = value.get("error")
    holder: Mapping[Any, Any] = inner if isinstance(inner, Mapping) else value
    for key in _DETAIL_KEYS:
        item = holder.get(key)
        if isinstance(item, int | float) and not isinstance(item, bool):
            item = str(item)
        if isinstance(item, str) and item.strip() and len(item) <= _MAX_DETAIL and item.strip() not in text:
            if any(pattern.search(item) for pattern in LEAK_PATTERNS):
                continue  # a traceback or a file path is for a developer: never served
            if text.strip() in item:
                return item.strip()  # the detail says the text and more ("Invalid file path: File not found: x")
            joint = " " if text.rstrip()[-1:] in (".", "!", "?", ":") else ": "
            return f"{text.rstrip()}{joint}{item.strip()}"
    return text


def status_of(value: object) -> int | None:
    """The HTTP-ish status a legacy value carries (``{"status": 404}``, ``{"error": {"code": 429}}``)."""
    if not isinstance(value, Mapping):
        return None
    for key in STATUS_KEYS:
        item = value.get(key)
        if isinstance(item, int) and not isinstance(item, bool) and 100 <= item <= 599:
            return item
        if isinstance(item, str) and item.isdigit() and 100 <= int(item) <= 599:
            return int(item)
    inner = value.get("error")
    return status_of(inner) if isinstance(inner, Mapping) else None


#: The keys of an MCP tool result a tool returns as a dict (``{"content": [{"type": "text", "text": ...}]}``).
_MCP_RESULT_KEYS: Final = frozenset({"content", "isError", "is_error", "structuredContent", "structured_content",
                                     "_meta", "meta", "resultType"})


def content_text(value: Mapping[Any, Any]) -> str | None:
    """The text blocks of an MCP tool result returned as a dict, joined; ``None`` for any other mapping."""
    content = value.get("content")
    if type(content) is not list or not content or not _MCP_RESULT_KEYS.issuperset(value):
        return None
    texts = [block["text"] for block in content
             if isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str)]
    return "\n".join(texts) if texts else None


def looks_like_error(value: object) -> bool:
    """Whether a legacy return value reads as an error: an error key, a 4xx/5xx status, a text that opens as an
    error ("Error: ...", "Could not ...", "Sheet 'Q3' not found": ``error_string``), an MCP result returned as a
    dict whose ``isError`` is set or whose text reads so."""
    if isinstance(value, str):
        return error_string(value) or json_error(value) is not None
    if isinstance(value, Mapping):
        if "content" in value and (text := content_text(value)) is not None:
            return value.get("isError", value.get("is_error")) is True or looks_like_error(text)
        if value.get("ok") is False or value.get("success") is False:
            return True
        if any(value.get(key) for key in ERROR_KEYS):
            return True
        status = status_of(value)
        if status is not None and status >= 400:
            return True
        state = value.get("status")
        return isinstance(state, str) and state.lower() in {"error", "failed", "failure", "fail"}
    return False


def text_matches(pattern: str, *, plain: bool = False) -> ValueMatch:
    """A predicate: the value is error-shaped and its error text matches ``pattern`` (case-insensitive);
    with ``plain=True`` a plain text result that matches counts too, as does an object's message
    (``{"status": "task_not_found", "message": "No such task found"}``): the pattern says what is an error."""
    regex = re.compile(pattern, re.IGNORECASE)

    def matcher(value: object) -> bool:
        if plain and isinstance(value, str | bytes | Mapping):
            text = error_text(value)
        elif not looks_like_error(value):
            return False
        else:
            text = error_text(value)
        return text is not None and regex.search(text) is not None

    matcher.__name__ = f"text~{pattern}"
    return matcher


def status_in(*statuses: int) -> ValueMatch:
    """A predicate: the value carries one of these HTTP-ish statuses."""
    wanted = frozenset(statuses)

    def matcher(value: object) -> bool:
        return status_of(value) in wanted

    matcher.__name__ = "status=" + ",".join(map(str, sorted(wanted)))
    STATUS_SETS[matcher] = wanted
    return matcher


#: Attributes by which an exception carries the HTTP status of the response that caused it (SDKs and hand-written).
EXCEPTION_STATUS_ATTRS: Final = ("status_code", "status", "http_status")


def exception_status(exc: BaseException) -> int | None:
    """The 4xx/5xx HTTP status an exception carries (``exc.status_code``, ``exc.response.status_code``), if any."""
    holders: tuple[object, ...] = (exc, getattr(exc, "response", None))
    for holder in holders:
        for name in EXCEPTION_STATUS_ATTRS:
            item = getattr(holder, name, None)
            if isinstance(item, int) and not isinstance(item, bool) and 400 <= item <= 599:
                return item
    return None
