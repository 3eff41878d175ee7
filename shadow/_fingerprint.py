"""Argument fingerprints: a hash of canonical JSON, independent of key order, defined for any Python value."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from shadow._redact import dumps, to_jsonable


def fingerprint(value: object) -> str:
    """32 hex digits identifying ``value`` by content; equal for equal data whatever the key order."""
    canonical = dumps(to_jsonable(value, redact=False, max_depth=64))
    return hashlib.blake2b(canonical.encode("utf-8"), digest_size=16).hexdigest()


def argument_hashes(args: Mapping[str, object]) -> dict[str, str]:
    """The fingerprint of each top-level argument, so an analysis can tell which field a repair changed."""
    return {str(key): fingerprint(item) for key, item in args.items()}
