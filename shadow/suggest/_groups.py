"""Grouping unmapped errors by message shape, and proposing a code, a reason and a remedy draft for each group."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from shadow.contract._codes import Code, NextAction, spec
from shadow.contract._payloads import count_sentences
from shadow.contract._phrases import PHRASES
from shadow.contract._reading import propose, reading
from shadow.suggest._shape import Shape, shape_of

if TYPE_CHECKING:
    from shadow.suggest._read import LogSlice, Unmapped

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|_+")
#: What a builtin exception raised on purpose usually means, when neither its text nor its name says more.
_BUILTIN_MEANING: Final = {
    "KeyError": (Code.NOT_FOUND, "a KeyError usually means the named item does not exist"),
    "IndexError": (Code.NOT_FOUND, "an IndexError usually means the named item does not exist"),
    "LookupError": (Code.NOT_FOUND, "a LookupError usually means the named item does not exist"),
    "ValueError": (Code.VALIDATION_ERROR, "a ValueError usually rejects an argument"),
    "TypeError": (Code.VALIDATION_ERROR, "a TypeError usually rejects an argument's type"),
}
_MINOR_FIELDS: Final = ("number", "status", "address", "date", "url", "host", "path", "errno")
_MAX_EXAMPLE: Final = 300
#: Words that lean toward a code, for naming the two closest candidates of a message no phrase places.
_CUES: Final[dict[Code, frozenset[str]]] = {
    Code.FAILED_PRECONDITION: frozenset({"state", "status", "pending", "order", "balance", "available",
        "allowed", "already", "before", "after", "first", "locked", "closed", "open", "active", "eligible",
        "enough", "left", "booked", "paid"}),
    Code.VALIDATION_ERROR: frozenset({"must", "should", "invalid", "format", "value", "field", "argument",
        "parameter", "number", "match", "expected", "type", "between", "total", "amount", "date"}),
    Code.NOT_FOUND: frozenset({"found", "exist", "exists", "unknown", "missing", "none", "named", "no"}),
    Code.PERMISSION_DENIED: frozenset({"access", "permission", "denied", "role", "owner", "admin", "forbidden"}),
    Code.CONFLICT: frozenset({"changed", "concurrent", "version", "conflict", "taken", "meanwhile"}),
    Code.QUOTA_EXCEEDED: frozenset({"limit", "many", "maximum", "exceeded", "quota", "per"}),
    Code.UNSUPPORTED_INPUT: frozenset({"supported", "kind", "only"}),
}
_WORD = re.compile(r"[a-z]+")
_GIVES_REMEDY: Final = re.compile(r"\b(?:use|pass|try|run|call|check|first|instead|before)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Proposal:
    """The code proposed for a message, and why (``code`` is ``None`` when nothing in the table fits)."""

    code: Code | None
    reason: str
    #: How sure the proposal is, 0 to 1: a specific phrase 0.85, the broad "invalid/missing" row or an exception
    #: class's name 0.6, what a builtin exception usually means 0.5; 0 when nothing was proposed.
    confidence: float = 0.0
    #: For an unplaced message, the two codes its words lean to most (a reviewer's starting point).
    candidates: tuple[Code, ...] = ()
    #: The phrase's own next_action, where it is not the code's default (a path outside the allowed directories).
    action: NextAction | None = None


def propose_code(text: str, exception: str | None = None) -> Proposal:
    """The code the phrase table gives ``text``; else what the exception class's name or kind says; else
    nothing, with the two closest candidates."""
    found = reading(text)
    if found is not None:
        phrase, said = found
        sure = 0.6 if phrase is PHRASES[-1] else 0.85
        return Proposal(phrase.code, f'reads as "{said}": {phrase.reason}' if said else phrase.reason, sure,
                        action=phrase.action)
    if exception is not None:
        name = exception.rsplit(".", 1)[-1]
        by_name = propose(_CAMEL.sub(" ", name))
        if by_name is not None:
            return Proposal(by_name.code, f'the exception class "{name}": {by_name.reason}', 0.6)
        if name in _BUILTIN_MEANING:
            code, why = _BUILTIN_MEANING[name]
            return Proposal(code, why, 0.5)
    return Proposal(None, "no phrase in the table fits; choose the code by hand", 0.0, candidates(text))


def candidates(text: str) -> tuple[Code, ...]:
    """The two codes whose cue words ``text`` shares most (ties in the table's order: a business-rule rejection
    is most often a failed precondition, then a wrong argument)."""
    words = set(_WORD.findall(text.lower()))
    ranked = sorted(_CUES, key=lambda code: -len(_CUES[code] & words))
    return tuple(ranked[:2])


@dataclass(frozen=True, slots=True)
class Group:
    """Unmapped errors of one tool with one message shape, and what `shadow rules suggest` proposes for them."""

    tool: str
    exception: str | None
    shape: Shape
    count: int
    share: float
    example: str
    code: Code | None
    reason: str
    message: str | None
    confidence: float = 0.0
    candidates: tuple[Code, ...] = ()
    action: NextAction | None = None  # the proposal's next_action, where it is not the code's default

    def to_dict(self) -> dict[str, Any]:
        """The group as JSON data."""
        return {"tool": self.tool, "exception": self.exception, "shape": self.shape.text, "count": self.count,
                "share": round(self.share, 4), "example": self.example,
                "code": self.code.value if self.code is not None else None, "reason": self.reason,
                "message": self.message, "confidence": self.confidence,
                "candidates": [c.value for c in self.candidates], "context_fields": list(self.shape.fields),
                "pattern": self.shape.pattern, "next_action": self.action.value if self.action is not None else None}


@dataclass(frozen=True, slots=True)
class Suggestions:
    """The groups, largest first, and the slice of the log they come from."""

    groups: tuple[Group, ...]
    calls: int
    errors: int
    unmapped: int
    tool: str | None = None
    since: dt.datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """The suggestions as JSON data."""
        return {"tool": self.tool, "since": self.since.isoformat() if self.since else None, "calls": self.calls,
                "errors": self.errors, "unmapped": self.unmapped,
                "unmapped_share": round(self.unmapped / self.errors, 4) if self.errors else 0.0,
                "proposed": sum(g.count for g in self.groups if g.code is not None),
                "groups": [g.to_dict() for g in self.groups]}

    def summary(self) -> str:
        """One line: how many errors were unmapped, and how many of them a proposal covers."""
        share = f"{self.unmapped / self.errors:.1%}" if self.errors else "0%"
        covered = sum(g.count for g in self.groups if g.code is not None)
        return (f"{self.unmapped} of {self.errors} errors unmapped ({share}) in {self.calls} calls; "
                f"{len(self.groups)} message shape{'' if len(self.groups) == 1 else 's'}, a code proposed for "
                f"{covered} of them")


def remedy(code: Code, fields: tuple[str, ...], text: str, shape: str | None = None) -> str:
    """A draft message for ``code``: the message's own template (its shape, ``{field}`` for each varying part)
    with the code's remedy after it, so the model reads what the tool said plus what to do; else a remedy with
    placeholders for the context fields (``{ref}``)."""
    phrase = propose(text)
    template = phrase.remedy if phrase is not None and phrase.code is code else spec(code).default_message
    own_template = _own_template(shape, fields, template)
    if own_template is not None:
        return own_template
    if "{value}" not in template:
        return template
    named = [f for f in fields if not f.startswith(_MINOR_FIELDS)] or list(fields)
    if named:
        return template.replace("{value}", "{" + named[0] + "}")
    own = " ".join(text.split())
    if fields or len(own) > 240:
        return spec(code).default_message
    # A message with no varying part: the tool's own words, and the remedy unless they give one.
    own = own.replace("{", "{{").replace("}", "}}")
    if _GIVES_REMEDY.search(own):
        return own
    return f"{own.rstrip('.')}. {spec(code).default_message}"


_PLACEHOLDER = re.compile(r"<([a-z_][a-z0-9_]*)>")


def _own_template(shape: str | None, fields: tuple[str, ...], template: str) -> str | None:
    """The shape as a message template plus the remedy's last sentence, when every placeholder is a field."""
    if shape is None or not fields or len(shape) > 200:
        return None
    names = _PLACEHOLDER.findall(shape.replace("<secret>", ""))
    if not names or any(name not in fields for name in names):
        return None
    own = shape.replace("{", "{{").replace("}", "}}").replace("<secret>", "[REDACTED]")
    own = _PLACEHOLDER.sub(lambda m: "{" + m.group(1) + "}", own).strip().rstrip(".")
    if count_sentences(own) > 1:
        return None
    after = template.split(". ", 1)[-1].replace("{value}", "it")
    return f"{own}. {after}"


def group(errors: Iterable[Unmapped], *, total: int | None = None) -> list[Group]:
    """The errors grouped by tool, exception class and message shape, largest group first."""
    buckets: dict[tuple[str, str | None, str], list[Unmapped]] = {}
    shapes: dict[tuple[str, str | None, str], Shape] = {}
    for error in errors:
        shape = shape_of(error.text)
        key = (error.tool, error.exception, shape.text)
        buckets.setdefault(key, []).append(error)
        shapes.setdefault(key, shape)
    count = total if total is not None else sum(len(b) for b in buckets.values())
    groups: list[Group] = []
    for key, members in buckets.items():
        first = members[0]
        proposal = propose_code(first.text, first.exception)
        shape = shapes[key]
        message = (remedy(proposal.code, shape.fields, first.text, shape.text) if proposal.code is not None
                   else None)
        groups.append(Group(first.tool, first.exception, shape, len(members), len(members) / max(count, 1),
                            first.text[:_MAX_EXAMPLE], proposal.code, proposal.reason, message, proposal.confidence,
                            proposal.candidates, proposal.action))
    groups.sort(key=lambda g: (-g.count, g.tool, g.shape.text))
    return groups


def suggest(found: LogSlice, *, tool: str | None = None, since: dt.datetime | None = None) -> Suggestions:
    """Suggestions for the unmapped errors of a slice of the log."""
    groups = group(found.unmapped)
    return Suggestions(tuple(groups), found.calls, found.errors, len(found.unmapped), tool, since)
