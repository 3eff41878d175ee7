"""The shape of an error message: its varying parts (numbers, ids, quoted values, paths, dates) masked and named."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_TOKENS: Final = re.compile(r"""
    (?P<url>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'"<>()\[\]]*[^\s'"<>()\[\]:.,;])
  | (?P<email>\b[\w.+-]+@[\w-]+\.[\w.-]+\b)
  | (?P<quoted>'[^'\n\s]{1,120}(?:\ [^'\n\s]+){0,2}'|"[^"\n\s]{1,120}(?:\ [^"\n\s]+){0,2}"|`[^`\n]{1,120}`)
  | (?P<path>(?<![\w.:/<>-])(?:~|\.{1,2})?/(?:[\w.@+%~-]+/?)+|\b[\w.-]+(?:/[\w.-]+)+/?)
  | (?P<host>\b(?:[a-z0-9-]+\.)+(?:com|org|net|io|dev|ai|co|edu|gov|de|uk|local|internal|example|invalid|test)\b)
  | (?P<date>\b\d{4}-\d{2}-\d{2}(?:[T\ ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b)
  | (?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)
  | (?P<address>\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b)
  | (?P<time>\b\d{1,2}:\d{2}(?::\d{2})?\b)
  | (?P<hex>\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b)
  | (?P<named>(?:(?<=\bid\ )|(?<=\bkey\ )|(?<=\bnamed\ )|(?<=\btable:\ )|(?<=\bname:\ ))[^\s'",;:)]+)
  | (?P<number>(?<![\w.])-?\d+(?:\.\d+)?(?![\w]))
""", re.VERBOSE)

#: What each kind of masked part is called in the shape and, by default, in context.
_FIELD: Final = {"url": "url", "email": "email", "path": "path", "host": "host", "date": "date", "uuid": "id",
                 "hex": "id", "address": "address", "time": "time", "number": "number", "quoted": "value",
                 "named": "value"}
#: What a masked part matches in the rule's regex.
_MATCH: Final = {"url": r"\S+", "email": r"\S+@\S+", "path": r"\S+", "host": r"[\w.-]+", "date": r"[\d\-T:.Z+ ]+?",
                 "uuid": r"[0-9a-fA-F-]{36}", "hex": r"[0-9a-fA-F]+", "address": r"[\d.:]+", "time": r"[\d:]+",
                 "number": r"-?\d+(?:\.\d+)?", "named": r"[^\s'\",;:)]+"}
_STATUS_BEFORE = re.compile(r"\b(?:status(?: code)?|http)\W{0,3}$", re.IGNORECASE)
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z_]{1,30})\W{0,3}$")
_NOT_NAMES: Final = frozenset({
    "the", "a", "an", "to", "for", "of", "in", "with", "at", "near", "from", "by", "is", "was", "and", "or", "not",
    "got", "on", "as", "but", "be", "it", "no", "error", "failed", "fetch", "open", "than", "found", "visit",
    "file", "exists", "named", "line", "code", "cmdline",
})
_MAX_SHAPE: Final = 300


@dataclass(frozen=True, slots=True)
class Shape:
    """A message with its varying parts masked (``<path>``), the regex that matches every message of that shape
    (one named group per part), and the context field each part fills."""

    text: str
    pattern: str
    fields: tuple[str, ...]


def _field_name(kind: str, before: str, taken: dict[str, int]) -> str:
    base = _FIELD[kind]
    if kind == "number" and _STATUS_BEFORE.search(before):
        base = "status"
    elif kind in ("quoted", "named", "number"):
        found = _WORD_BEFORE.search(before)
        word = found.group(1).lower() if found else ""
        if word and word not in _NOT_NAMES:
            base = word
    taken[base] = taken.get(base, 0) + 1
    return base if taken[base] == 1 else f"{base}_{taken[base]}"


def _fixed(text: str) -> str:
    """A regex for fixed text: escaped, any run of whitespace matching any other."""
    return r"\s+".join(re.escape(part) for part in re.split(r"\s+", text)) if text.strip() else (
        r"\s*" if text else "")


def shape_of(message: str) -> Shape:
    """The shape of ``message``; the regex, anchored at the start, covers its first line (at most 200
    characters of it), and the end too when that is the whole message."""
    text = message.strip()
    first = text.split("\n", 1)[0][:200]
    pieces: list[str] = []
    regex: list[str] = []
    fields: list[str] = []
    taken: dict[str, int] = {}
    position = consumed = 0
    for found in _TOKENS.finditer(text):
        kind = found.lastgroup or "number"
        before = text[position:found.start()]
        name = _field_name(kind, text[max(0, found.start() - 40):found.start()], taken)
        pieces += [before, f"<{name}>" if kind != "quoted" else f"{found.group(0)[0]}<{name}>{found.group(0)[0]}"]
        if found.end() <= len(first):
            regex.append(_fixed(first[consumed:found.start()]))
            consumed = found.end()
            if kind == "quoted":
                quote = re.escape(found.group(0)[0])
                regex.append(f"{quote}(?P<{name}>[^{quote}\\n]*){quote}")
            else:
                regex.append(f"(?P<{name}>{_MATCH[kind]})")
            fields.append(name)
        position = found.end()
    pieces.append(text[position:])
    if consumed < len(first):
        regex.append(_fixed(first[consumed:]))
    shape = re.sub(r"[ \t]+", " ", "".join(pieces))[:_MAX_SHAPE]
    whole = first == text
    return Shape(shape, r"^\s*" + "".join(regex) + (r"\s*$" if whole else ""), tuple(fields))
