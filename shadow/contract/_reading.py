"""What an error text reads as: the phrase table's first row after a wrapper's opening, checked for a no-retry.

Unless the author warns against the retry that row would advise.
"""

from __future__ import annotations

import functools
import re

from shadow.contract._codes import NextAction, defaults
from shadow.contract._masking import MAX_READ, mask_locations
from shadow.contract._phrases import PHRASES, Phrase

#: A wrapper's opening that says only "an error happened here" ("Error executing tool x:", "Query execution
#: failed:", "Security violation:"): the meaning is in what follows, which is read first.
_WRAPPER = re.compile(
    r"^\s*(?:(?:mcp )?error(?: -?\d+)?|unexpected error|an? error occurred|error occurred|database error|"
    r"security violation|(?:[\w<>-]+ ){0,3}(?:failed|error)|error (?:while |when )?[a-z]+ing\b[^:\n]{0,80})\s*:\s*",
    re.IGNORECASE)


#: The author warns that repeating the call is unsafe ("do not retry it", "retrying may start a duplicate run"):
#: a code whose next action is to repeat the call would contradict the author, so such a text is left unplaced.
_NO_RETRY = re.compile(
    r"\b(?:do not|don't|never|must not|should not) (?:retry|repeat|re-?run|re-?send|re-?submit)\b|"
    r"\bnot (?:safe|idempotent) to (?:retry|repeat)\b|\bretrying (?:may|might|could|would|will)\b", re.IGNORECASE)


def warm() -> None:
    """Compile every row of the phrase table now (each compiles on first use otherwise)."""
    for phrase in PHRASES:
        _ = phrase.pattern


def reading(text: str) -> tuple[Phrase, str] | None:
    """The phrase ``text`` reads as (``propose``) and the words in it that matched, or ``None``."""
    phrase = propose(text)
    if phrase is None:
        return None
    found = phrase.pattern.search(mask_locations(text))
    return phrase, found.group(0).strip() if found is not None else ""


def _first(masked: str) -> Phrase | None:
    for phrase in PHRASES:
        if phrase.pattern.search(masked):
            return phrase
    return None


@functools.lru_cache(maxsize=1024)
def propose(text: str) -> Phrase | None:
    """The first phrase found in ``text`` (``_propose``), or ``None`` when that phrase says "repeat the call" and
    the author warns against repeating it."""
    phrase = _propose(text)
    if phrase is not None and defaults(phrase.code)[1] is NextAction.RETRY and _NO_RETRY.search(text[:MAX_READ]):
        return None
    return phrase


def _propose(text: str) -> Phrase | None:
    """The first phrase found in ``text`` (URLs, paths and varying values masked), or ``None``; what follows a
    wrapper's opening ("Error executing tool x: ...") is read first, the whole text when that says nothing."""
    masked = mask_locations(text)
    inner = masked
    for _ in range(3):
        stripped = _WRAPPER.sub("", inner, count=1)
        if stripped == inner:
            break
        inner = stripped
    if inner != masked and inner.strip():
        found = _first(inner)
        if found is not None:
            return found
    return _first(masked)
