"""The paragraph a tool description carries: every code, what it means, and the three next actions."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Literal

from shadow.contract._codes import (
    CODE_TABLE,
    DOWNGRADED_WHEN_NOT_IDEMPOTENT,
    NEXT_ACTION_MEANINGS,
    Code,
    CodeSpec,
    NextAction,
)

Format = Literal["text", "markdown", "json", "brief"]


def _rows(codes: Iterable[Code | str] | None, idempotent: bool) -> list[CodeSpec]:
    rows = list(CODE_TABLE.values())
    if codes is not None:
        wanted = {Code(c) for c in codes}
        rows = [row for row in rows if row.code in wanted]
    if idempotent:
        return rows
    return [dataclasses.replace(row, retryable=False, next_action=NextAction.ASK_USER,
                                meaning=f"{row.meaning}; the call may have taken effect, so check before calling again")
            if row.code in DOWNGRADED_WHEN_NOT_IDEMPOTENT else row for row in rows]


def describe(codes: Iterable[Code | str] | None = None, *, fmt: Format = "text", idempotent: bool = True) -> str:
    """The codes paragraph, generated from the code table; ``codes`` narrows it to what one tool returns.
    ``idempotent=False``: the paragraph of a tool whose calls a retry could repeat (a booking, a payment), whose
    service failures are ``ask_user``, as its payloads say."""
    rows = _rows(codes, idempotent)
    if fmt == "json":
        return json.dumps(
            {
                "shape": {
                    "success": {"ok": True, "data": "..."},
                    "failure": {"ok": False, "error": ["code", "message", "retryable", "next_action", "context"]},
                },
                "next_actions": {a.value: m for a, m in NEXT_ACTION_MEANINGS.items()},
                "codes": [
                    {"code": r.code.value, "meaning": r.meaning, "retryable": r.retryable,
                     "next_action": r.next_action.value, "http_status": r.http_status}
                    for r in rows
                ],
            },
            indent=2,
        ) + "\n"
    if fmt == "brief":
        return _brief(rows)
    intro = (
        'This tool returns JSON. Success: {"ok": true, "data": ...}. Failure: {"ok": false, "error": {"code", '
        '"message", "retryable", "next_action", "context"}}. Read error.message for the remedy and follow '
        "error.next_action:"
    )
    actions = [(a.value, m) for a, m in NEXT_ACTION_MEANINGS.items()]
    codes_intro = "Error codes (default next_action in brackets):"
    if fmt == "markdown":
        lines = [intro, ""]
        lines += [f"- `{name}`: {meaning}." for name, meaning in actions]
        lines += ["", codes_intro, ""]
        lines += [f"- `{r.code.value}` ({r.next_action.value}): {r.meaning}." for r in rows]
        return "\n".join(lines) + "\n"
    lines = [intro]
    lines += [f"  {name}: {meaning}." for name, meaning in actions]
    lines.append(codes_intro)
    lines += [f"  {r.code.value} [{r.next_action.value}]: {r.meaning}." for r in rows]
    return "\n".join(lines) + "\n"


def _brief(rows: list[CodeSpec]) -> str:
    """The paragraph in about a third of the words, for a description the model reads with every request (each
    tool of a server): the shape, the three next actions, the codes by name; each payload's message says the rest."""
    actions = " ".join(f"{a.value}: {m}." for a, m in NEXT_ACTION_MEANINGS.items())
    return ('Returns JSON: {"ok": true, "data": ...} or {"ok": false, "error": {"code", "message", "retryable", '
            '"next_action", "context"}}. On an error, read its message for the remedy and follow its next_action. '
            f"{actions} Codes: {', '.join(r.code.value for r in rows)}.\n")


def markdown_table() -> str:
    """The code table as the README shows it (a test keeps the README in step)."""
    lines = ["| code | retryable | next_action | HTTP | meaning |", "|---|---|---|---|---|"]
    lines += [
        f"| `{r.code.value}` | {str(r.retryable).lower()} | {r.next_action.value} | {r.http_status} | {r.meaning} |"
        for r in CODE_TABLE.values()
    ]
    return "\n".join(lines) + "\n"
