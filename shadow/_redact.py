"""Making arbitrary values safe to show or store: JSON-able, free of credentials, and bounded in size."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import itertools
import json
import math
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final

REDACTED: Final = "[REDACTED]"
TRUNCATED_KEY: Final = "_truncated"

JSONValue = None | bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"]

_SECRET_WORDS: Final = frozenset(
    {
        "password", "passwd", "pwd", "passphrase", "secret", "token", "apikey", "authorization", "auth",
        "cookie", "cookies", "credential", "credentials", "bearer", "signature", "sessionid", "jwt", "otp",
        "pin", "ssn", "dsn",
    }
)
_SECRET_PAIRS: Final = frozenset(
    {("api", "key"), ("private", "key"), ("access", "key"), ("secret", "key"), ("client", "secret"),
     ("set", "cookie"), ("session", "id"), ("x", "api")}
)
_WORD_SPLIT = re.compile(r"[^a-zA-Z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
_SECRET_VALUE = re.compile(
    r"(?i:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"
    r"|\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{12,}"
    r"|\b(?:ghp|gho|ghs|github_pat|xox[abps])_[A-Za-z0-9_-]{12,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
    r"|(?i:password|passwd|pwd|secret|token|api[_-]?key)\s*[=:]\s*[^\s&,;\"']+"
    r"|://[^/\s:@]+:[^/\s@]+@"
)


class Public(str):
    """A string that is safe to show although it sits under a secret-looking key (a signed token)."""

    __slots__ = ()


def is_secret_key(key: str) -> bool:
    """Whether a mapping key names a credential (``password``, ``api_key``, ``X-Auth-Token``, ...)."""
    words = [w.lower() for w in _WORD_SPLIT.split(key) if w]
    if any(w in _SECRET_WORDS for w in words):
        return True
    joined = "".join(words)
    if joined in _SECRET_WORDS or joined in {"apikey", "privatekey", "accesskey", "clientsecret", "setcookie"}:
        return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(words))


def scrub_text(text: str) -> str:
    """Replace credential-shaped substrings (bearer tokens, API keys, URL passwords) inside free text."""
    if isinstance(text, Public):
        return text
    return _SECRET_VALUE.sub(_scrub_match, text)


def _scrub_match(match: re.Match[str]) -> str:
    found = match.group(0)
    if found.startswith("://"):
        return "://" + REDACTED + "@"
    for sep in ("=", ":"):
        head, _, _ = found.partition(sep)
        if sep in found and not head.lower().startswith(("bearer", "basic")) and len(head) < 20:
            return f"{head}{sep}{REDACTED}"
    return REDACTED


def to_jsonable(value: object, *, redact: bool = True, max_depth: int = 20) -> JSONValue:
    """Convert any Python value to plain JSON data, redacting credentials; never raises.

    Cycles, excessive depth and unknown types become short markers rather than errors.
    """
    return _Converter(redact, max_depth).convert(value, 0)


class _Converter:
    def __init__(self, redact: bool, max_depth: int) -> None:
        self.redact = redact
        self.max_depth = max_depth
        self.active: set[int] = set()

    def convert(self, value: object, depth: int) -> JSONValue:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            return value if not isinstance(value, enum.Enum) else self.convert(value.value, depth)
        if isinstance(value, float):
            return value if math.isfinite(value) else str(value)
        if isinstance(value, str):
            if isinstance(value, enum.Enum):
                return str(value.value)
            return scrub_text(value) if self.redact else str(value)
        if depth >= self.max_depth:
            return "<too deep>"
        if isinstance(value, bytes | bytearray | memoryview):
            return f"<bytes len={len(value)}>"
        if isinstance(value, enum.Enum):
            return self.convert(value.value, depth)
        if isinstance(value, dt.datetime | dt.date | dt.time):
            return value.isoformat()
        if isinstance(value, decimal.Decimal | uuid.UUID):
            return str(value)
        ident = id(value)
        if ident in self.active:
            return "<cycle>"
        self.active.add(ident)
        try:
            return self._container(value, depth)
        finally:
            self.active.discard(ident)

    def _container(self, value: object, depth: int) -> JSONValue:
        if isinstance(value, Mapping):
            out: dict[str, JSONValue] = {}
            for key, item in value.items():
                name = key if isinstance(key, str) else str(self.convert(key, depth + 1))
                if self.redact and is_secret_key(name) and item is not None and not isinstance(item, Public):
                    out[name] = REDACTED
                else:
                    out[name] = self.convert(item, depth + 1)
            return out
        if isinstance(value, list | tuple):
            return [self.convert(item, depth + 1) for item in value]
        if isinstance(value, set | frozenset):
            items = [self.convert(item, depth + 1) for item in value]
            return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return self._container(fields, depth)
        dump = getattr(value, "model_dump", None)  # a pydantic model (tool arguments and results often are)
        if callable(dump) and hasattr(type(value), "model_fields") and not isinstance(value, type):
            try:
                fields = dump()
            except Exception:
                return f"<{type(value).__name__}>"
            if isinstance(fields, Mapping):
                return self._container(fields, depth)
            return self.convert(fields, depth + 1)  # a RootModel dumps its root
        return f"<{type(value).__name__}>"


def dumps(value: JSONValue) -> str:
    """Compact, key-sorted JSON: the canonical text used for sizes and fingerprints."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def cap(value: JSONValue, max_bytes: int, *, max_string: int = 256) -> JSONValue:
    """Bound ``value``'s canonical JSON to ``max_bytes``; a trimmed mapping says so under ``_truncated``."""
    if _size(value) <= max_bytes:
        return value
    shortened = _shorten_strings(value, max_string)
    if _size(shortened) <= max_bytes:
        return _mark(shortened)
    if isinstance(shortened, dict):
        kept: dict[str, JSONValue] = {TRUNCATED_KEY: True}
        for key, item in shortened.items():
            trial = {**kept, key: item}
            if _size(trial) <= max_bytes:
                kept = trial
        return kept
    text = dumps(shortened)
    room = max(0, max_bytes // 2 - 16)
    return {TRUNCATED_KEY: True, "preview": text[:room], "bytes": len(text.encode())}


def _mark(value: JSONValue) -> JSONValue:
    if isinstance(value, dict):
        return {TRUNCATED_KEY: True, **value}
    return value


def _shorten_strings(value: JSONValue, limit: int) -> JSONValue:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "…"
    if isinstance(value, list):
        return [_shorten_strings(v, limit) for v in value[:50]]
    if isinstance(value, dict):
        return {k: _shorten_strings(v, limit) for k, v in value.items()}
    return value


def _size(value: JSONValue) -> int:
    return len(dumps(value).encode())


def safe_json(value: Any, max_bytes: int) -> JSONValue:
    """``to_jsonable`` then ``cap``: what goes into a log record."""
    return cap(to_jsonable(value), max_bytes)


#: What must never reach a payload: traceback text, file paths, installed-package paths.
LEAK_PATTERNS: Final = (
    re.compile(r"Traceback \(most recent call last\)"),
    re.compile(r"File \"[^\"]+\", line \d+"),
    re.compile(r"site-packages|dist-packages"),
    re.compile(r"(?<![\w:/])/(?:home|root|usr|etc|var|tmp|opt|srv|Users|private)/[\w.\-/]+"),
    re.compile(r"\b[A-Za-z]:\\(?:[\w.\- ]+\\)+[\w.\-]*"),
    re.compile(r"\.py\b(?:\"|'|:\d)"),
)


def find_leaks(payload: object, secrets: Iterable[str] = ()) -> list[str]:
    """What in ``payload`` looks like a leak: traceback text, file paths, ``site-packages``, given secrets."""
    text = dumps(to_jsonable(payload, redact=False))
    found = [m.group(0) for pattern in LEAK_PATTERNS for m in pattern.finditer(text)]
    found += [secret for secret in secrets if secret and secret in text]
    return found
