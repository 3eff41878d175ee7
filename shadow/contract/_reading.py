"""What an error text reads as: the phrase table's first row in its main clause, after a wrapper's opening.

Checked for a no-retry, unless the author warns against the retry that row would advise.
"""

from __future__ import annotations

import functools
import re
from typing import Final

from shadow.contract._codes import Code, NextAction, defaults
from shadow.contract._masking import MAX_READ, mask_locations
from shadow.contract._openings import EXCEPTION_REPR
from shadow.contract._phrase import Phrase
from shadow.contract._phrases import PHRASES, STATUS_LINE

#: A wrapper's opening that says only "an error happened here" ("Error executing tool x:", "Query execution
#: failed:", "Security violation:"): the meaning is in what follows, which is read first.
_WRAPPER = re.compile(
    r"^\s*(?:(?:mcp )?error(?: -?\d+)?|unexpected error|an? error occurred|error occurred|database error|"
    r"(?:an? )?(?:unexpected |unknown |internal )?(?:server )?error (?:has )?occurred (?:while|when) [^:\n]{1,60}|"
    r"http(?:/[\d.]+)? \d{3}(?: [\w-]+){0,3}|"
    r"security violation|(?:an? )?(?:unexpected |unknown )?error (?:has )?occurred\.\s*(?:error )?message|"
    r"(?:error )?message|(?:[\w<>-]+ ){0,3}(?:failed|error)|(?:internal |unexpected )?error (?:while |when )?"
    r"[a-z]+ing\b[^:\n]{0,80})\s*:\s*",
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


#: A first sentence followed by a remedy or a side rule ("... is blocked. Only read operations are allowed.",
#: "Too many requests. Please try again later."): the first sentence is read first, so the advice never decides.
_REMEDY_AFTER = re.compile(
    r"[.!](?=\s+(?:please(?! install)|try|retry|use|check|verify|ensure|make sure|only|wait|restart|"
    r"you (?:may|can|should)|contact|consider|see)\b)|,(?=\s+please(?! install)\b)", re.IGNORECASE)
#: A status line the layer appends to every message ("...\n Code: 500"): read after the message it follows.
_TRAILER = re.compile(r"\n\s*(?:status(?: code)?|code)\s*:\s*\d{3}\s*$", re.IGNORECASE)


def _main_clause(text: str) -> str:
    """``text`` without a status trailer and without the remedy or side rule that follows its first sentence."""
    text = _TRAILER.sub("", text)
    found = _REMEDY_AFTER.search(text)
    return text[:found.end()] if found is not None else text


#: The rows that read an HTTP status written in the text, and the rows of words: a status decides only when no
#: words do ("failed with status 500: 'due_date' must be a date" is about the date; a retry would repeat it).
_STATUS_ROWS: Final = tuple(phrase for phrase in PHRASES if phrase.source.startswith(STATUS_LINE))
_WORD_ROWS: Final = tuple(phrase for phrase in PHRASES if not phrase.source.startswith(STATUS_LINE))
#: A client library's typed error with a 4xx status ("NotFoundError(404, ...)", "AuthorizationException(403, ...)")
#: names the kind of mistake: its status is read before the words of its detail (400 and 422, which libraries use
#: for every rejected request, are not).
_TYPED_CLIENT_ERROR: Final = re.compile(r"\b\w*(?:Error|Exception)\(\s*4(?!00|22)\d\d\b")


def _first_in_main(text: str, rows: tuple[Phrase, ...]) -> Phrase | None:
    """The phrase of ``text``'s main clause, else of the whole text: a remedy ("Please try again later"), a side
    rule ("Only read operations are allowed") or a status trailer never outranks what the message says."""
    main = _main_clause(text)
    if main != text and main.strip():
        found = _first(main, rows)
        if found is not None:
            return found
    return _first(text, rows)


def _first(masked: str, rows: tuple[Phrase, ...]) -> Phrase | None:
    for phrase in rows:
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
    if phrase is not None and phrase.code in _A_BUG and EXCEPTION_REPR.match(text):
        return None  # "IndexError('list index out of range')" returned: the tool caught it to show what running
        # the call's input raised (a REPL, a JSON path), not a failure of its own that nothing the model does fixes
    return phrase


#: The codes a tool's own failure is read as (``stop``): never given to an exception's repr the tool returned.
_A_BUG: Final = frozenset({Code.INTERNAL_ERROR, Code.NOT_IMPLEMENTED})


def _propose(text: str) -> Phrase | None:
    """The first phrase found in ``text`` (URLs, paths and varying values masked), or ``None``; what follows a
    wrapper's opening ("Error executing tool x: ...") is read first, the whole text when that says nothing."""
    return _read_masked(mask_locations(text))


@functools.lru_cache(maxsize=2048)
def _read_masked(masked: str) -> Phrase | None:
    """``_propose`` of a masked text: texts that differ only in an id, an amount or a quoted value are one template,
    read once (the table's reading costs far more than the masking). Words first, a written status after; in each,
    what follows a wrapper's opening first, then the whole text."""
    typed = _TYPED_CLIENT_ERROR.search(masked)
    if typed is not None and (found := _first(typed.group(0), _STATUS_ROWS)) is not None:
        return found
    inner = _unwrapped(masked)
    texts = (inner, masked) if inner != masked and inner.strip() else (masked,)
    if len(texts) == 2 and _SERVICE_OPENING.search(masked[:len(masked) - len(inner)]):
        texts = (masked, inner)  # "DNS error: no records found for host": the opening names the failure
    for rows in (_WORD_ROWS, _STATUS_ROWS):
        for text in texts:
            if (found := _first_in_main(text, rows)) is not None:
                return found
    return None


#: A wrapper opening that names a failed service ("DNS error:", "Connection error:"): what follows is its detail,
#: never a reading of its own ("no records found" is the DNS answer, not a missing thing).
_SERVICE_OPENING: Final = re.compile(
    r"\bDNS\b|\bresolv(?:e|ing)\b|\bconnect(?:ion|ing)?\b|\bnetwork\b|\bsocket\b|\bgateway\b|\bupstream\b",
    re.IGNORECASE)


def _unwrapped(masked: str) -> str:
    """``masked`` without up to three wrapper openings ("Error executing tool x: Query failed: ...")."""
    inner = masked
    for _ in range(3):
        stripped = _WRAPPER.sub("", inner, count=1)
        if stripped == inner:
            break
        inner = stripped
    return inner
