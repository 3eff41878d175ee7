"""Signed context tokens: opaque continuation and retry tokens that must come back exactly as issued."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Literal

from shadow._redact import Public
from shadow.contract._codes import Code
from shadow.contract._payloads import Fail

VERSION: Final = "s1"
DEFAULT_MAX_BYTES: Final = 1024
MIN_KEY_BYTES: Final = 16
_KID = re.compile(r"[A-Za-z0-9_-]{1,32}")
_B64 = re.compile(r"[A-Za-z0-9_-]*")

Problem = Literal["malformed", "oversized", "unknown_key", "bad_signature", "expired"]

_RESEND: Final = "Send the token exactly as it was issued, for example copied unchanged from the last result."
_RESTART: Final = "Start again without it, for example repeat the first call with no token."
_EXPLAINED: Final[MappingProxyType[str, tuple[str, str]]] = MappingProxyType(
    {
        "malformed": ("is not a token this service issued", _RESEND),
        "oversized": ("is longer than a token this service issues", _RESEND),
        "unknown_key": ("was signed with a key this service no longer accepts", _RESTART),
        "bad_signature": ("was altered or was not issued by this service", _RESEND),
        "expired": ("has expired", _RESTART),
    }
)


class TokenError(Fail):
    """A token was rejected; a ``validation_error`` naming the field, never quoting the token."""

    def __init__(self, problem: Problem, *, field: str = "token") -> None:
        what, remedy = _EXPLAINED[problem]
        self.problem: Problem = problem
        self.field = field
        shown = field if len(field) <= 80 else field[:77] + "..."
        super().__init__(Code.VALIDATION_ERROR, f"The field '{shown}' {what}. {remedy}", field=field, problem=problem)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class KeyRing:
    """Signing keys by key id; ``current`` signs, every key verifies (rotate by adding, then retiring)."""

    keys: Mapping[str, bytes]
    current: str

    def __post_init__(self) -> None:
        frozen = MappingProxyType(dict(_checked_keys(self.keys)))
        if self.current not in frozen:
            known = ", ".join(sorted(frozen))
            raise ValueError(f"current key id {self.current!r} is not in the key ring (known: {known})")
        object.__setattr__(self, "keys", frozen)

    def __repr__(self) -> str:  # never show key material
        return f"KeyRing(current={self.current!r}, kids={sorted(self.keys)!r})"

    @classmethod
    def of(cls, keys: Mapping[str, bytes], *, current: str | None = None) -> KeyRing:
        """A key ring; ``current`` may be omitted when there is exactly one key."""
        return cls(keys, _pick_kid(keys, current))

    def key(self, kid: str) -> bytes | None:
        """The key with id ``kid``, or None."""
        return self.keys.get(kid)


def _checked_keys(keys: Mapping[str, bytes]) -> Mapping[str, bytes]:
    if not isinstance(keys, Mapping) or not keys:
        raise ValueError("keys must be a non-empty mapping of key id to key bytes, for example {'k1': os.urandom(32)}")
    for kid, key in keys.items():
        if not isinstance(kid, str) or not _KID.fullmatch(kid):
            raise ValueError(f"key id {kid!r} must be 1 to 32 letters, digits, '-' or '_', for example 'k2025'")
        if not isinstance(key, bytes | bytearray):
            raise TypeError(f"key {kid!r} must be bytes, for example secrets.token_bytes(32) or text.encode()")
        if len(key) < MIN_KEY_BYTES:
            raise ValueError(f"key {kid!r} has {len(key)} bytes; use at least {MIN_KEY_BYTES} (32 recommended)")
    return {kid: bytes(key) for kid, key in keys.items()}


def _pick_kid(keys: Mapping[str, bytes], kid: str | None) -> str:
    if kid is not None:
        return kid
    if isinstance(keys, Mapping) and len(keys) == 1:
        return next(iter(keys))
    raise ValueError("several keys are given; name the signing key with kid=..., or pass a KeyRing with current=")


def _ring(keys: KeyRing | Mapping[str, bytes], kid: str | None = None, *, signing: bool = True) -> KeyRing:
    if isinstance(keys, KeyRing):
        return keys if kid is None or kid == keys.current else KeyRing(keys.keys, kid)
    if not signing and isinstance(keys, Mapping) and keys:  # verifying: any key may have signed
        return KeyRing(keys, next(iter(keys)))
    return KeyRing(keys, _pick_kid(keys, kid))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes | None:
    """Strict decoding: the canonical unpadded URL-safe form only, so no two texts decode alike."""
    if not _B64.fullmatch(text) or len(text) % 4 == 1:
        return None
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return data if _b64(data) == text else None


def _mac(key: bytes, kid: str, body: str) -> bytes:
    return hmac.new(key, f"{VERSION}.{kid}.{body}".encode("ascii"), hashlib.sha256).digest()


def sign(
    payload: Mapping[str, Any],
    *,
    keys: KeyRing | Mapping[str, bytes],
    kid: str | None = None,
    ttl: float | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    now: float | None = None,
) -> Public:
    """A URL-safe token carrying ``payload`` (JSON data), signed with HMAC-SHA256 by key ``kid``.

    ``ttl`` (seconds) makes it expire. The token is a ``shadow.Public`` string, so it survives context
    redaction under a key such as ``continuation_token``.
    """
    if not isinstance(payload, Mapping):
        raise TypeError(f"payload must be a mapping, not {type(payload).__name__}")
    ring = _ring(keys, kid)
    body_obj: dict[str, Any] = {"p": dict(payload)}
    if ttl is not None:
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl) or ttl <= 0:
            raise ValueError(f"ttl must be a positive number of seconds, for example 900, not {ttl!r}")
        body_obj["x"] = math.ceil(((time.time() if now is None else now) + ttl) * 1000)
    try:
        compact = json.dumps(body_obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"payload must be JSON data (str keys; str, number, bool, None, list, dict): {exc}") from None
    body = _b64(compact.encode("utf-8"))
    key = ring.key(ring.current)
    assert key is not None
    token = f"{VERSION}.{ring.current}.{body}.{_b64(_mac(key, ring.current, body))}"
    if len(token) > max_bytes:
        raise ValueError(
            f"the token would be {len(token)} bytes, over max_bytes={max_bytes}; "
            "carry less in it, for example an id to look the rest up by"
        )
    return Public(token)


def verify(
    token: object,
    *,
    keys: KeyRing | Mapping[str, bytes],
    now: float | None = None,
    field: str = "token",
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> dict[str, Any]:
    """The payload of a token ``sign`` issued; raises ``TokenError`` naming ``field`` for any other token."""
    ring = _ring(keys, signing=False)
    if not isinstance(token, str):
        raise TokenError("malformed", field=field)
    if len(token) > max_bytes:
        raise TokenError("oversized", field=field)
    parts = token.split(".")
    if len(parts) != 4 or parts[0] != VERSION or not token.isascii():
        raise TokenError("malformed", field=field)
    _, kid, body, sig = parts
    given = _unb64(sig)
    raw = _unb64(body)
    if given is None or raw is None or not _KID.fullmatch(kid):
        raise TokenError("malformed", field=field)
    key = ring.key(kid)
    if key is None:
        raise TokenError("unknown_key", field=field)
    if not hmac.compare_digest(_mac(key, kid, body), given):
        raise TokenError("bad_signature", field=field)
    try:
        decoded = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):  # signed by us, so only a key shared with a buggy signer
        raise TokenError("malformed", field=field) from None
    if not isinstance(decoded, dict) or not isinstance(decoded.get("p"), dict):
        raise TokenError("malformed", field=field)
    expiry = decoded.get("x")
    if expiry is not None:
        if not isinstance(expiry, int) or isinstance(expiry, bool):
            raise TokenError("malformed", field=field)
        if (time.time() if now is None else now) * 1000 >= expiry:
            raise TokenError("expired", field=field)
    payload: dict[str, Any] = decoded["p"]
    return payload
