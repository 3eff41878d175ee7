"""Argument fingerprints: a keyed hash of canonical JSON, so no stored fingerprint gives back the value it hashes.

The key comes from ``SHADOW_FINGERPRINT_KEY`` (any string; give every process of a fleet the same one so their
fingerprints compare), else from the file ``SHADOW_FINGERPRINT_KEY_FILE`` (default
``~/.config/shadow/fingerprint.key``), which is created with 32 random bytes on first use. The key never goes into
the call log. Rotating it (a new value or a new file) starts new fingerprints: calls before and after the rotation no
longer compare, so rotate between analysis windows.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from shadow._logs import get_logger
from shadow._redact import REDACTED, dumps, scrub_text, to_jsonable

log = get_logger("shadow.fingerprint")

KEY_ENV: Final = "SHADOW_FINGERPRINT_KEY"
KEY_FILE_ENV: Final = "SHADOW_FINGERPRINT_KEY_FILE"
_PERSON: Final = b"shadow-fp-v2"

_lock = threading.Lock()
_key: bytes | None = None


def default_key_file() -> Path:
    """Where the generated key lives unless ``SHADOW_FINGERPRINT_KEY_FILE`` says otherwise."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "shadow" / "fingerprint.key"


def key_file() -> Path:
    """The key file in force."""
    return Path(os.environ.get(KEY_FILE_ENV) or default_key_file())


def _derive(secret: bytes) -> bytes:
    return hashlib.blake2b(secret, digest_size=32, person=_PERSON).digest()


#: A key file holds one line (the generated one: 64 hex digits); past this size it is not a key file, and never read.
MAX_KEY_FILE: Final = 4096
#: A key shorter than this is guessable; ``shadow doctor`` says so (it is used all the same).
MIN_KEY: Final = 16


class KeyFileError(OSError):
    """The key file exists but cannot be a key: not a regular file (``/dev/null``, ``/dev/zero``, a FIFO), too large,
    or empty."""


def _read_key(path: Path) -> bytes:
    """The key file's stripped content, read up to ``MAX_KEY_FILE`` bytes; ``KeyFileError`` when it cannot be a key."""
    mode = path.stat().st_mode  # FileNotFoundError when missing
    if not stat.S_ISREG(mode):
        raise KeyFileError(f"{path} is not a regular file")
    with path.open("rb") as source:
        data = source.read(MAX_KEY_FILE + 1)
    if len(data) > MAX_KEY_FILE:
        raise KeyFileError(f"{path} holds more than {MAX_KEY_FILE} bytes; a key file holds one short line")
    if not data.strip():
        raise KeyFileError(f"{path} is empty")
    return data.strip()


def key_file_problem(path: Path) -> str | None:
    """What is wrong with an existing key file (``shadow doctor``), or None when it holds a usable key."""
    try:
        key = _read_key(path)
    except KeyFileError as exc:
        return str(exc)
    except OSError as exc:
        return f"{path} cannot be read ({exc.strerror or type(exc).__name__})"
    if b"\n" in key or not key.isascii() or not key.decode("ascii").isprintable() or b" " in key:
        return (f"{path} does not look like a key file (more than one line, spaces or binary bytes); point "
                f"{KEY_FILE_ENV} at the key file, or remove it to have one created")
    if len(key) < MIN_KEY:
        return f"{path} holds a key of {len(key)} characters; use at least {MIN_KEY} (the generated one has 64)"
    return None


def _read_or_create(path: Path) -> bytes:
    try:
        return _derive(_read_key(path))
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = secrets.token_hex(32).encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it first: use theirs
        return _derive(_read_key(path))
    with os.fdopen(fd, "wb") as out:
        out.write(fresh + b"\n")
    log.warning("fingerprint_key_created", path=str(path),
                hint=f"share this file (or set {KEY_ENV}) across processes whose fingerprints must compare")
    return _derive(fresh)


def load_key() -> bytes:
    """The fingerprint key: ``SHADOW_FINGERPRINT_KEY``, else the key file (created on first use)."""
    from_env = os.environ.get(KEY_ENV)
    if from_env:
        return _derive(from_env.encode("utf-8"))
    return _read_or_create(key_file())


def _the_key() -> bytes:
    global _key
    found = _key
    if found is not None:
        return found
    with _lock:
        if _key is None:
            try:
                _key = load_key()
            except OSError as exc:
                # No readable or writable key file: a key for this process only (fingerprints of other processes
                # will not compare), never an unkeyed hash.
                log.warning("fingerprint_key_unavailable", path=str(key_file()), error_type=type(exc).__name__,
                            problem=str(exc) if isinstance(exc, KeyFileError) else None,
                            hint=f"set {KEY_ENV} or make {KEY_FILE_ENV} writable; shadow doctor checks it")
                _key = _derive(secrets.token_bytes(32))
        return _key


def reset_key() -> None:
    """Read the key again on next use (tests, or after a rotation in a long-lived process)."""
    global _key
    _key = None


def _after_fork() -> None:
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork)


def fingerprint(value: object) -> str:
    """32 hex digits identifying ``value`` by content under the fleet's key; equal for equal data."""
    canonical = dumps(to_jsonable(value, redact=False, max_depth=64))
    return hashlib.blake2b(canonical.encode("utf-8"), digest_size=16, key=_the_key()).hexdigest()


def argument_hashes(args: Mapping[str, object]) -> dict[str, str]:
    """The fingerprint of each top-level argument, so an analysis can tell which field a repair changed."""
    return {str(key): fingerprint(item) for key, item in args.items()}


_names: dict[str, str] = {}


def safe_name(name: str) -> str:
    """A stored name (tool, session id) without credentials: a name holding one becomes ``[REDACTED]-<hash>``.

    The hash is keyed (``fingerprint``), so two such names stay apart without the credential being guessable."""
    found = _names.get(name)
    if found is None:
        found = name
        if scrub_text(name) != name:
            found = f"{REDACTED}-{fingerprint(name)[:12]}"
        if len(_names) < 4096:
            _names[name] = found
    return found
