"""The shape of an error message: its varying parts (numbers, ids, quoted values, paths, dates) masked and named.

One function for every place that groups error texts: ``shadow rules suggest`` (groups, draft rules) and the
report's evidence (unmapped errors by shape, shown in the report and the dashboard); both read a legacy payload's
error text with ``legacy_text``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from shadow._redact import REDACTED, scrub_text
from shadow.contract._rules import error_text
from shadow.normalize._mcp import mcp_error_value

_TOKENS: Final = re.compile(rf"(?P<secret>{re.escape(REDACTED)})" + r"""
  | (?P<rate>\b\d+(?:\.\d+)?\s?/\s?(?:s|sec|second|min|minute|h|hr|hour|d|day|week|month|year)s?\b)
  | (?P<amount>[$€£¥]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|JPY|CHF)\b)
  | (?P<url>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'"<>()\[\]]*[^\s'"<>()\[\]:.,;])
  | (?P<email>\b[\w.+-]+@[\w-]+\.[\w.-]+\b)
  | (?P<quoted>'[^'\n\s]{1,120}(?:\ [^'\n\s]+){0,2}'|(?<![\w"])"[^"\n\s\\]{1,120}(?:\ [^"\n\s\\]+){0,2}"(?!\s*:)
              |`[^`\n]{1,120}`|‘[^’\n]{1,120}’|“[^”\n]{1,120}”)
  | (?P<path>(?<![\w.:/<>-])(?:~|\.{1,2})?/(?:[\w.@+%~-]+/?)+|\b[\w.-]+(?:/[\w.-]+)+/?
             |\b[A-Za-z]:(?:\\[\w.@+-]+)+\\?)
  | (?P<host>\b(?:[a-z0-9-]+\.)+(?:com|org|net|io|dev|ai|co|edu|gov|de|uk|local|internal|example|invalid|test)\b)
  | (?P<date>\b\d{4}-\d{2}-\d{2}(?:[T\ ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b)
  | (?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)
  | (?P<address>\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b)
  | (?P<time>\b\d{1,2}:\d{2}(?::\d{2})?\b)
  | (?P<hex>\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b)
  | (?P<named>(?:(?<=\bid\ )|(?<=\bkey\ )|(?<=\bnamed\ )|(?<=\btable:\ )|(?<=\bname:\ ))[^\s'",;:)]+)
  | (?P<person>(?:(?<=\bDr\.\ )|(?<=\bMr\.\ )|(?<=\bMrs\.\ )|(?<=\bMs\.\ )|(?<=\bProf\.\ ))[A-Z][\w'-]+)
  | (?P<ident>\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*\b)
  | (?P<number>(?<![\w.])-?\d+(?:\.\d+)?(?![\w]))
  | (?P<last>(?<=:\ )(?![A-Z_]+\b)[^\s'",;:)<>]{1,60}(?=\s*$))
""", re.VERBOSE)

#: What each kind of masked part is called in the shape and, by default, in context.
_FIELD: Final = {"rate": "rate", "amount": "amount", "ident": "id", "last": "value", "url": "url", "email": "email",
                 "path": "path", "host": "host", "date": "date", "uuid": "id",
                 "hex": "id", "address": "address", "time": "time", "number": "number", "quoted": "value",
                 "named": "value", "person": "name"}
#: What a masked part matches in the rule's regex.
_MATCH: Final = {"secret": r"\S+", "rate": r"[\d.]+\s?/\s?\w+", "amount": r"\S+(?:\s?[A-Z]{3})?",
                 "ident": r"[\w-]+", "last": r"[^\s'\",;:)]+",
                 "url": r"\S+", "email": r"\S+@\S+", "path": r"\S+", "host": r"[\w.-]+", "date": r"[\d\-T:.Z+ ]+?",
                 "uuid": r"[0-9a-fA-F-]{36}", "hex": r"[0-9a-fA-F]+", "address": r"[\d.:]+", "time": r"[\d:]+",
                 "number": r"-?\d+(?:\.\d+)?", "named": r"[^\s'\",;:)]+",
                 "person": r"[\w'-]+"}
_STATUS_BEFORE = re.compile(r"\b(?:status(?: code)?|http)\W{0,3}$", re.IGNORECASE)
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z_]{1,30})\W{0,3}$")
_NOT_NAMES: Final = frozenset({
    "the", "a", "an", "to", "for", "of", "in", "with", "at", "near", "from", "by", "is", "was", "and", "or", "not",
    "got", "on", "as", "but", "be", "it", "no", "error", "failed", "fetch", "open", "than", "found", "visit",
    "file", "exists", "named", "line", "code", "cmdline",
})
#: A last word after one of these is the message itself ("Error: Unauthorized"), not a value.
_SAYS: Final = re.compile(r"\b(?:error|errors|failed|failure|exception|reason|message|warning|fatal|status|code)"
                          r"\W{0,3}$", re.IGNORECASE)
_MAX_SHAPE: Final = 300
_SPACE: Final = re.compile(r"\s+")
#: What SQLAlchemy puts after a driver's message: the statement, its parameters, the link to its docs.
_TRAILER: Final = re.compile(r"\n\s*(?:\[SQL: .*?\]|\[parameters: .*?\]|\(Background on this error at: [^)\n]*\))[ \t]*"
                             r"(?=\n|\Z)", re.DOTALL)


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
    elif kind in ("quoted", "named", "number", "ident", "last", "amount"):
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
    characters of it), and the end too when that is the whole message.

    Credential-shaped text is scrubbed first and shown as ``<secret>``, matched but never a context field (a rule
    must not copy a credential into a payload). Runs of whitespace read as one space in the shape.
    """
    full = scrub_text(message).strip()
    text = _TRAILER.sub("", full)  # one template, whatever statement it ran
    first = text.split("\n", 1)[0][:200]
    pieces: list[str] = []
    regex: list[str] = []
    fields: list[str] = []
    taken: dict[str, int] = {}
    position = consumed = 0
    for found in _TOKENS.finditer(text):
        kind = found.lastgroup or "number"
        if kind == "last" and _SAYS.search(text[max(0, found.start() - 20):found.start()]):
            continue
        before = text[position:found.start()]
        token = found.group(0)
        if kind == "secret":
            pieces += [before, "<secret>"]
            if found.end() <= len(first):
                regex += [_fixed(first[consumed:found.start()]), rf"(?:{_MATCH[kind]})"]
                consumed = found.end()
            position = found.end()
            continue
        name = _field_name(kind, text[max(0, found.start() - 40):found.start()], taken)
        pieces += [before, f"<{name}>" if kind != "quoted" else f"{token[0]}<{name}>{token[-1]}"]
        if found.end() <= len(first):
            regex.append(_fixed(first[consumed:found.start()]))
            consumed = found.end()
            if kind == "quoted":
                opening, closing = re.escape(token[0]), re.escape(token[-1])
                regex.append(f"{opening}(?P<{name}>[^{closing}\\n]*){closing}")
            else:
                regex.append(f"(?P<{name}>{_MATCH[kind]})")
            fields.append(name)
        position = found.end()
    pieces.append(text[position:])
    if consumed < len(first):
        regex.append(_fixed(first[consumed:]))
    shape = _SPACE.sub(" ", "".join(pieces))[:_MAX_SHAPE]
    whole = first == full
    return Shape(shape, r"^\s*" + "".join(regex) + (r"\s*$" if whole else ""), tuple(fields))


def legacy_text(payload: object) -> tuple[str, str | None]:
    """The error text a legacy payload carries, and the exception class when the legacy tool raised.

    Reads the adapter's ``{"exception", "message"}``, an MCP result (``content`` text blocks, the SDK's
    ``Error executing tool NAME:`` prefix removed), a string, or an error-shaped value."""
    if isinstance(payload, list):
        texts = [str(block.get("text", "")) for block in payload
                 if isinstance(block, Mapping) and block.get("type") == "text"]
        if texts:
            return _without_prefix("\n".join(texts)), None
    if isinstance(payload, Mapping):
        if isinstance(payload.get("exception"), str) and "message" in payload:
            return str(payload.get("message") or ""), str(payload["exception"])
        content = payload.get("content")
        if isinstance(content, list | str):  # an MCP result (proxy), or an imported one (``shadow import``)
            return legacy_text(content)
        found = error_text(payload)
        if found:
            return _without_prefix(found), None
        return json.dumps(payload, ensure_ascii=False, sort_keys=True)[:2000], None
    if isinstance(payload, str):
        return _without_prefix(payload), None
    return json.dumps(payload, ensure_ascii=False)[:2000], None


def _without_prefix(text: str) -> str:
    """``text`` without the MCP SDK's prefix, and a JSON error object returned as text read for its message
    (``'{"error": "Unsupported distribution: zipf"}'`` is one shape per message, not ``{"error":"<value>"}``)."""
    inner = mcp_error_value(text).get("error")
    text = inner if isinstance(inner, str) else text
    return error_text(text) or text
