"""Making arbitrary values safe to show or store: JSON-able, free of credentials, and bounded in size."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import functools
import itertools
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from shadow import _hostile, _scrub
from shadow._scrub import SHORTEST, looks_random, scrub, token_like, vendor_name

REDACTED: Final = _scrub.REDACTED

TRUNCATED_KEY: Final = "_truncated"
#: Characters of one string a stored value keeps at most before it is scrubbed (the rest is cut, marked ``…``).
MAX_SCRUBBED: Final = 1_048_576

JSONValue = None | bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"]

_SECRET_WORDS: Final = frozenset(
    {
        "password", "passwd", "pwd", "passphrase", "passcode", "pass", "pw", "secret", "secrets", "token",
        "apikey", "authorization", "auth", "cookie", "cookies", "credential", "credentials", "cred", "creds",
        "bearer", "signature", "sessionid", "jwt", "otp", "totp", "mfa", "pin", "ssn", "dsn", "cvv", "cvc", "cvv2",
        "privkey", "secretkey", "connstr", "mnemonic", "sig", "hmac", "creditcard", "cardnumber", "ccnumber",
        "webhooksecret", "sas",
    }
)
#: ``<word>_key`` names a credential for these words (``signing_key``, ``master_key``, ...); ``key`` alone too.
_KEY_OWNERS: Final = frozenset(
    {
        "api", "private", "priv", "access", "secret", "signing", "sign", "encryption", "encrypt", "enc", "decryption",
        "client", "master", "ssh", "gpg", "pgp", "hmac", "auth", "session", "license", "root", "service", "account",
        "storage", "app", "crypto", "wallet", "aes", "rsa", "jwt", "db", "database", "shared", "subscription", "x",
    }
)
_SECRET_PAIRS: Final = frozenset(
    {("client", "secret"), ("set", "cookie"), ("session", "id"), ("x", "api"), ("connection", "string"),
     ("recovery", "code"), ("backup", "code"), ("seed", "phrase"), ("security", "code"), ("verification", "code"),
     ("card", "number"), ("account", "number"), ("routing", "number"), ("credit", "card"), ("card", "cvc"),
     ("cc", "number"), ("card", "pan")}
)
_WORD_SPLIT = re.compile(r"[^a-zA-Z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

#: Shorter than this and without ``:`` or ``=``, a text holds nothing the patterns find.
_SHORTEST: Final = SHORTEST


def _text_valued(value: object) -> bool:
    """Whether ``value`` is a ``decimal.Decimal`` or a ``uuid.UUID`` (stored as its text). Neither module is
    imported for it: a value can only be one once the application has loaded its module."""
    for module, name in _TEXT_VALUED:
        loaded = sys.modules.get(module)
        if loaded is not None and isinstance(value, getattr(loaded, name)):
            return True
    return False


_TEXT_VALUED: Final = (("decimal", "Decimal"), ("uuid", "UUID"))
#: The common containers, which are neither: one set lookup instead of ``_text_valued``.
_PLAIN_CONTAINERS: Final = frozenset({dict, list, tuple, set, frozenset})


class Public(str):
    """A string that is safe to show although it sits under a secret-looking key (a signed token)."""

    __slots__ = ()


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """Whether a mapping key names a credential (``password``, ``api_key``, ``X-Auth-Token``, ...); a bare ``key``
    hides its value only when the value looks generated (``hides_value``)."""
    words = [w.lower() for w in _WORD_SPLIT.split(key) if w]
    if any(w in _SECRET_WORDS for w in words):
        return True
    joined = "".join(words)
    if joined in _SECRET_WORDS or joined in {"privatekey", "accesskey", "clientsecret", "setcookie", "seedphrase",
                                             "recoverycode"}:
        return True
    if joined.endswith("key") and joined[:-3] in _KEY_OWNERS:
        return True
    return any(pair in _SECRET_PAIRS or (pair[1] in ("key", "keys") and pair[0] in _KEY_OWNERS)
               for pair in itertools.pairwise(words))


def scrub_text(text: str) -> str:
    """Replace credential-shaped substrings (provider tokens, keys, URL passwords, PEM keys) inside free text."""
    if isinstance(text, Public):
        return text
    return scrub(text)


@functools.lru_cache(maxsize=4096)
def hides_value(key: str) -> bool:
    """Whether the value under ``key`` is hidden when it looks generated: a provider's name (``twitter``, ...), or
    a bare ``key``, which names a lookup key (an item's, a cache's: ``user:42``, ``ORD-2024-000123``) as often as a
    credential (``hidden_value`` says which)."""
    return vendor_name(key) or _bare_key(key)


def _bare_key(key: str) -> bool:
    return "".join(w.lower() for w in _WORD_SPLIT.split(key) if w) in ("key", "keys")


def hidden_value(key: str, value: str) -> bool:
    """Whether the text ``value`` under a ``hides_value`` key is hidden: token-like under a provider's name; under
    a bare ``key`` only when it also looks random for its length (not an order number, a date, a UUID or a file
    path: ids a model needs to read)."""
    if not token_like(value):
        return False
    return not _bare_key(key) or looks_random(value)


#: Credential-keyed argument values shorter than this are not searched for in a record's other text: a short value
#: (``pin=1``) would mangle ordinary words and numbers, and ``args`` shows it redacted anyway.
MIN_ECHOED_SECRET: Final = 4


def secret_values(arguments: Mapping[str, object]) -> tuple[str, ...]:
    """The texts of the values under credential keys in ``arguments`` (nested too), longest first; usually ``()``.

    A tool may echo such a value in its result or exception text (``f"bad login with {password}"``): these are what
    ``redact_values`` removes from the rest of the call's record and from the payload served in cutover.
    """
    found: set[str] = set()
    _collect(arguments, False, found, 0, [_hostile.WALK_BUDGET])
    return tuple(sorted(found, key=len, reverse=True)) if found else ()


def _collect(value: object, secret: bool, found: set[str], depth: int, budget: list[int]) -> None:
    kind = type(value)
    if kind is str or kind is int:  # the common case first: exact types, no isinstance against ABCs
        if secret and len(text := str(value)) >= MIN_ECHOED_SECRET:
            found.add(text)
        return
    if depth > 20 or value is None or kind is float or kind is bool or budget[0] < 0:
        return
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        for key, item in value.items():  # type: ignore[attr-defined]
            budget[0] -= 1
            if budget[0] < 0:  # an endless or huge mapping: the walk stops (``_hostile.WALK_BUDGET``)
                _hostile.note("walk_budget")
                return
            named = isinstance(key, str) and (is_secret_key(key) or (
                hides_value(key) and isinstance(item, str) and hidden_value(key, item)))
            _collect(item, secret or named, found, depth + 1, budget)
    elif kind is list or isinstance(value, tuple | set | frozenset):
        for item in value:  # type: ignore[attr-defined]
            budget[0] -= 1
            if budget[0] < 0:
                _hostile.note("walk_budget")
                return
            _collect(item, secret, found, depth + 1, budget)
    elif secret and isinstance(value, str | int) and not isinstance(value, bool | Public):
        text = str(value)
        if len(text) >= MIN_ECHOED_SECRET:
            found.add(text)


def redact_values(value: JSONValue, secrets: tuple[str, ...]) -> JSONValue:
    """``value`` with each of ``secrets`` replaced by ``REDACTED`` wherever it appears in its strings and keys."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, list):
        return [redact_values(item, secrets) for item in value]
    if isinstance(value, dict):
        return {str(redact_values(key, secrets)): redact_values(item, secrets) for key, item in value.items()}
    return value


def to_jsonable(value: object, *, redact: bool = True, max_depth: int = 20) -> JSONValue:
    """Convert any Python value to plain JSON data, redacting credentials; never raises.

    Cycles, excessive depth and unknown types become short markers rather than errors; past
    ``_hostile.WALK_BUDGET`` items (an endless ``__iter__``) the walk stops: the mapping reached says
    ``_truncated``, the list ends with ``"<truncated>"``.
    """
    return _Converter(redact, max_depth).convert(value, 0)


class _Converter:
    def __init__(self, redact: bool, max_depth: int) -> None:
        self.redact = redact
        self.max_depth = max_depth
        self.active: set[int] = set()
        self.steps = _hostile.WALK_BUDGET

    def _spent(self) -> bool:
        """One more item visited; True (counted once per walk) when the walk's budget is gone."""
        self.steps -= 1
        if self.steps == -1:
            _hostile.note("walk_budget")
        return self.steps < 0

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
            if not self.redact:
                return str(value)
            # A stored string is capped far below this (``max_payload_bytes``): scrubbing all of a huge one would
            # only spend the writer's CPU bound on text that is cut away.
            return scrub_text(value if len(value) <= MAX_SCRUBBED else value[:MAX_SCRUBBED] + "…")
        if depth >= self.max_depth:
            return "<too deep>"
        if isinstance(value, bytes | bytearray | memoryview):
            return f"<bytes len={len(value)}>"
        if isinstance(value, enum.Enum):
            return self.convert(value.value, depth)
        if isinstance(value, dt.datetime | dt.date | dt.time):
            return value.isoformat()
        if type(value) not in _PLAIN_CONTAINERS and _text_valued(value):
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
                if self._spent():
                    out[TRUNCATED_KEY] = True
                    break
                name = key if isinstance(key, str) else str(self.convert(key, depth + 1))
                if not self.redact:
                    out[name] = self.convert(item, depth + 1)
                    continue
                shown = scrub_text(name)
                if shown != name:  # a credential used as a key: the key is redacted, kept apart from others
                    shown = _free_key(out, shown)
                if item is not None and not isinstance(item, Public) and (is_secret_key(name) or (
                        isinstance(item, str) and hides_value(name) and hidden_value(name, item))):
                    out[shown] = REDACTED
                else:
                    out[shown] = self.convert(item, depth + 1)
            return out
        if isinstance(value, list | tuple):
            return self._items(value, depth)
        if isinstance(value, set | frozenset):
            items = self._items(value, depth)
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

    def _items(self, value: Iterable[object], depth: int) -> list[JSONValue]:
        items: list[JSONValue] = []
        for item in value:
            if self._spent():
                items.append("<truncated>")
                break
            items.append(self.convert(item, depth + 1))
        return items


def _free_key(taken: Mapping[str, object], key: str) -> str:
    """``key``, or ``key#2``, ``key#3``, ...: the first that is not in ``taken``."""
    found, n = key, 1
    while found in taken:
        n += 1
        found = f"{key}#{n}"
    return found


def dumps(value: JSONValue) -> str:
    """Compact, key-sorted JSON: the canonical text used for sizes and fingerprints."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def cap(value: JSONValue, max_bytes: int, *, max_string: int = 256,
        size_of: Callable[[JSONValue], int] | None = None) -> JSONValue:
    """Bound ``value``'s canonical JSON to ``max_bytes``; a trimmed mapping says so under ``_truncated``.
    ``size_of`` measures a value's canonical JSON (default ``dumps``; the writer's fast path passes orjson's, which
    encodes plain values alike, many times faster)."""
    measure = size_of or _size
    if measure(value) <= max_bytes:
        return value
    return cap_shortened(_shorten_strings(value, max_string), max_bytes, measure)


def cap_shortened(shortened: JSONValue, max_bytes: int, measure: Callable[[JSONValue], int]) -> JSONValue:
    """``cap`` of a value over ``max_bytes`` once its strings and lists are shortened (``shorten``)."""
    if measure(shortened) <= max_bytes:
        return _mark(shortened)
    if isinstance(shortened, dict):
        kept: dict[str, JSONValue] = {TRUNCATED_KEY: True}
        size = measure(kept)
        for key, item in shortened.items():  # linear: each pair's size once (a comma and the pair)
            extra = measure({key: item}) - 1
            if size + extra <= max_bytes:
                kept[key] = item
                size += extra
        return kept
    text = dumps(shortened)
    room = max(0, max_bytes // 2 - 16)
    return {TRUNCATED_KEY: True, "preview": text[:room], "bytes": len(text.encode())}


def _mark(value: JSONValue) -> JSONValue:
    if isinstance(value, dict):
        return {TRUNCATED_KEY: True, **value}
    return value


def shorten(value: Any, limit: int = 256) -> Any:
    """``value`` with strings cut to ``limit`` characters and lists to their first 50 items (``cap``'s first
    step): what of a value over its limit can be stored; anything else is left as it is."""
    return _shorten_strings(value, limit)


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
