"""Masking an error text before the phrase table reads it: locations and varying values never decide a code."""

from __future__ import annotations

import functools
import re
from typing import Final

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>()\[\]]+")
_PATH = re.compile(r"(?<![\w.:/<>-])(?:~|\.{1,2})?/(?:[\w.@+%~-]+/?)+")
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:\\(?:[\w.@+ -]+\\?)+")
#: Values that vary from call to call and must never decide a code: quoted values (one token, not a JSON key or
#: value), emails, UUIDs, dates, rates,
#: amounts, and identifiers (letters with digits, snake_case with digits, hex). A product or company word inside
#: one (``'acme/billing-service'``, ``BILLING42``) is masked with it.
_VALUES = re.compile(r"""
    (?<!:)(?<!:\ )(?:'[^'\s]{1,120}'|(?<![\w"])"[^"\s\\]{1,120}"(?!\s*:)|`[^`\s]{1,120}`
                   |‘[^’\s]{1,120}’|“[^”\s]{1,120}”)
  | \b[\w.+-]+@[\w-]+\.[\w.-]+\b
  | \b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b
  | \b\d{4}-\d{2}-\d{2}(?:[T\ ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b
  | \b\d+(?:\.\d+)?\s?/\s?(?:s|sec|second|min|minute|h|hr|hour|d|day|week|month|year)s?\b
  | [$€£¥]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|JPY|CHF)\b
  | \b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*\b
""", re.VERBOSE)
#: A list of two or more quoted values ("Overview", "Service quotas"; the options a message offers) is values, never
#: the message: no item may be a JSON key (followed by a colon), and an exception's arguments
#: (``BadRequestError(400, 'x', 'index already exists')``) are not a list.
_ITEM = r"""(?:"[^"\n]{1,80}"|'[^'\n]{1,80}')(?!\s*:)"""
_QUOTED_LIST = re.compile(rf"(?<![\w\"'(])(?<!\(\d\d\d, ){_ITEM}(?:\s*,\s*{_ITEM})+")
#: ``ERROR_CODES`` and ``snake_case_codes`` (no digits) read as words: ``channel_not_found`` is "channel not found".
_SNAKE = re.compile(r"\b[A-Za-z]+(?:_[A-Za-z]+)+\b")
#: Phrases are read in the start of a text; an error's meaning is stated there, and a long text stays cheap.
MAX_READ: Final = 4096


#: A run of 200 or more characters with no space (base64, a data URL, a hex dump, minified data): no words in it.
_BLOB: Final = re.compile(r"\S{200,}")


def has_blob(text: str) -> bool:
    """Whether ``text`` holds a run of 200 or more characters with no space."""
    return len(text) >= 200 and _BLOB.search(text) is not None


def without_blobs(text: str, keep: int = 0) -> str:
    """``text`` with each run of 200 or more characters with no space cut to its first ``keep`` and an ellipsis, so
    the words after a blob ("Response from data:...base64,eHh4... exceeds 1000 bytes") are still read and shown.
    Looks at the first 16 ``MAX_READ``s of the text at most."""
    head = text[:MAX_READ * 16]
    if not has_blob(head):
        return head
    return _BLOB.sub(lambda found: found.group(0)[:keep] + "\u2026", head)


@functools.lru_cache(maxsize=512)
def mask_locations(text: str) -> str:
    """The start of the text (``MAX_READ`` characters) with URLs and paths replaced by ``<url>`` and ``<path>``,
    varying values (quoted values, ids, amounts, dates, rates) by ``<value>``, and snake_case codes spelt as
    words, so a word inside a value (a host under ``.invalid``, a repository named ``billing``) never decides."""
    text = without_blobs(text)[:MAX_READ]
    text = _PATH.sub("<path>", _WINDOWS_PATH.sub("<path>", _URL.sub("<url>", text)))
    text = _VALUES.sub(_value, _QUOTED_LIST.sub("<value>", text))
    return _SNAKE.sub(lambda m: m.group(0).replace("_", " "), text)


def _value(found: re.Match[str]) -> str:
    token = found.group(0)
    # An HTTP status or an error number written next to letters (``HTTP/1.1 404``, ``E11000``) stays readable.
    if token.strip("'\"`‘’“”").isdigit() or token.startswith(("<", "HTTP", "http")):
        return token
    return "<value>"
