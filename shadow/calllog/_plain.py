"""Fast paths for values that are plain JSON already: checked in one walk, copied and hashed through orjson.

Most tool arguments and results are small dicts of short strings and numbers. For those, the full conversion
(``_redact.to_jsonable``) and the canonical ``json.dumps`` are pure overhead: ``clean`` says in one walk whether a
value is plain JSON that redaction would leave unchanged and that orjson encodes exactly as ``_redact.dumps``
does; then ``snapshot`` copies it and ``fingerprint`` hashes it. Anything else takes the general path.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Mapping
from typing import Any, Final

import orjson

from shadow import _fingerprint, _redact
from shadow._redact import JSONValue, hides_value, is_secret_key, scrub_text
from shadow.contract._values import ERROR_KEYS, STATUS_KEYS, looks_like_error

_MAX_DEPTH: Final = 20  # below both conversion depths (redaction 20, fingerprints 64)
_MAX_STRING: Final = 4096
_SHORT: Final = _redact._SHORTEST  # shorter and without ":" or "=": scrub_text returns the text as it is
_SORTED: Final = orjson.OPT_SORT_KEYS
_MAX_KEYS: Final = 65536  # a mapping keyed by ids (a user's 20,000 keys) is read from here on its next call
_secret_keys: dict[str, bool] = {}
_plain_keys: set[str] = set()  # the keys of _secret_keys that are not secret: one membership test per key


def _secret(key: str) -> bool:
    """Whether redaction changes the value under ``key`` or the key itself (a credential used as a key)."""
    found = _secret_keys.get(key)
    if found is None:
        found = is_secret_key(key) or hides_value(key) or scrub_text(key) != key
        if len(_secret_keys) >= _MAX_KEYS:  # ids used as keys never end: start again rather than stop learning
            _secret_keys.clear()
            _plain_keys.clear()
        _secret_keys[key] = found
        if not found:
            _plain_keys.add(key)
    return found


def _scalar(value: object, kind: type) -> bool | None:
    """Whether a scalar is clean; None when ``value`` is not a scalar (a container, or another type)."""
    if kind is str:
        text: str = value  # type: ignore[assignment]
        return len(text) <= _MAX_STRING and scrub_text(text) == text
    if kind is int:
        return -(2**63) <= value < 2**63  # type: ignore[operator]
    if value is None or kind is bool:
        return True
    if kind is float:
        number: float = value  # type: ignore[assignment]
        return number == 0.0 or 1e-4 <= abs(number) < 1e15  # where repr() and orjson agree
    return None


def clean(value: object, depth: int = 0) -> bool:
    """Whether ``value`` is plain JSON data that redaction leaves as it is and orjson encodes canonically."""
    kind = type(value)
    if kind is dict:
        if depth >= _MAX_DEPTH:
            return False
        mapping: dict[Any, Any] = value  # type: ignore[assignment]
        known = _plain_keys
        for key, item in mapping.items():
            if type(key) is not str:
                return False
            if item is None:
                continue
            if key not in known and _secret(key):
                return False
            inner = type(item)
            if inner is str:  # the common case, inline: short text without a credential's characters
                if not (len(item) < _SHORT and ":" not in item and "=" not in item) and (
                        len(item) > _MAX_STRING or scrub_text(item) != item):
                    return False
            elif inner is dict or inner is list:
                if not clean(item, depth + 1):
                    return False
            elif inner is int:  # inline too: what orjson encodes (64 bits)
                if not -(2**63) <= item < 2**63:
                    return False
            elif not _scalar(item, inner):
                return False
        return True
    if kind is list:
        if depth >= _MAX_DEPTH:
            return False
        for item in value:  # type: ignore[attr-defined]
            inner = type(item)
            if inner is str:
                if not (len(item) < _SHORT and ":" not in item and "=" not in item) and (
                        len(item) > _MAX_STRING or scrub_text(item) != item):
                    return False
            elif inner is dict or inner is list:
                if not clean(item, depth + 1):
                    return False
            elif inner is int:  # inline too: what orjson encodes (64 bits)
                if not -(2**63) <= item < 2**63:
                    return False
            elif not _scalar(item, inner):
                return False
        return True
    return bool(_scalar(value, kind))


def snapshot(value: JSONValue) -> tuple[JSONValue, int]:
    """A copy of a ``clean`` value (the caller may change the original later) and its JSON size in bytes."""
    if value is None or type(value) in (str, int, float, bool):
        return value, len(orjson.dumps(value))
    data = orjson.dumps(value)
    return orjson.loads(data), len(data)


_keyed: tuple[bytes, Any] | None = None  # (key, a blake2b keyed with it): copied, not keyed anew, per hash


def _size(value: JSONValue) -> int:
    return len(orjson.dumps(value, option=_SORTED))


def capped(value: JSONValue, max_bytes: int) -> JSONValue:
    """``_redact.cap`` of a ``clean`` value, its sizes measured by orjson (as ``_redact.dumps`` encodes it)."""
    return _redact.cap(value, max_bytes, size_of=_size)


def capped_big(value: object, max_bytes: int) -> JSONValue | None:
    """``capped`` of a value known to be over ``max_bytes``, checked ``clean`` only in what is kept of it (its
    strings and lists shortened first: the items cut away are never scrubbed); None when that part is not clean."""
    shortened = _redact.shorten(value)
    if not clean(shortened):
        return None
    return _redact.cap_shortened(shortened, max_bytes, _size)


def _hasher() -> Any:
    """A fresh BLAKE2b keyed like the general path (the fleet's fingerprint key)."""
    global _keyed
    key = _fingerprint._the_key()
    found = _keyed
    if found is None or found[0] is not key:
        found = _keyed = (key, hashlib.blake2b(digest_size=16, key=key))
    return found[1].copy()


def fingerprint(value: JSONValue) -> str:
    """``_fingerprint.fingerprint`` of a ``clean`` value, without the conversion."""
    hasher = _hasher()
    hasher.update(orjson.dumps(value, option=_SORTED))
    return hasher.hexdigest()  # type: ignore[no-any-return]


def argument_hashes(args: Mapping[str, JSONValue]) -> dict[str, str]:
    """``_fingerprint.argument_hashes`` of clean arguments."""
    base = _hasher()
    hashes: dict[str, str] = {}
    for key, item in args.items():
        hasher = base.copy()
        hasher.update(orjson.dumps(item, option=_SORTED))
        hashes[key] = hasher.hexdigest()
    return hashes


def general_fingerprint(value: object) -> str:
    """The fingerprint of any value: the fast path when it is clean."""
    return fingerprint(value) if clean(value) else _fingerprint.fingerprint(value)  # type: ignore[arg-type]


def dumps(value: object) -> str:
    """JSON text of a stored value (orjson; ``json`` for what orjson declines, such as very large integers)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value)


_NAMES: dict[int, tuple[inspect.Signature, tuple[str, ...], bool, bool] | None] = {}
#: Keys through which the default result rules can see an error in a dict (``contract._rules``).
_ERROR_SHAPED_KEYS: Final = frozenset({"ok", "success", "content", *ERROR_KEYS, *STATUS_KEYS})


def positional_names(signature: inspect.Signature) -> tuple[tuple[str, ...], bool, bool] | None:
    """The parameter names positional arguments bind to, whether there is ``**kwargs``, whether the first is
    ``self``/``cls``; None when ``*args`` or keyword-only parameters make binding need ``inspect``."""
    found = _NAMES.get(id(signature))
    if found is None or found[0] is not signature:
        params = list(signature.parameters.values())
        simple = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_KEYWORD) for p in params)
        names = tuple(p.name for p in params if p.kind is not p.VAR_KEYWORD)
        var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
        found = (signature, names, var_kw, bool(names) and names[0] in ("self", "cls")) if simple and names else None
        if len(_NAMES) < 10000:
            _NAMES[id(signature)] = found
    return None if found is None else found[1:]


def never_an_error(value: object) -> bool:
    """Whether no default result rule can match ``value`` (so its outcome is success without asking them)."""
    kind = type(value)
    if kind is dict:
        return _ERROR_SHAPED_KEYS.isdisjoint(value)  # type: ignore[arg-type]
    if isinstance(value, str) and kind is str:
        return not looks_like_error(value)  # the rules' own reading of a text
    return value is None or kind in (int, float, bool, list)
