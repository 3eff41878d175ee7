"""Names the call log stores (tool, rule, session): text PostgreSQL can hold, checked where the caller gives them."""

from __future__ import annotations

from typing import Final

MAX_NAME: Final = 200  # the length of the call log's name columns (calls.tool, calls.rule, calls.session_id)


def name_problem(value: object, limit: int = MAX_NAME) -> str | None:
    """Why ``value`` cannot be stored as a name, or None when it can."""
    if not isinstance(value, str) or not value.strip():
        return "must be a non-empty string"
    if len(value) > limit:
        return f"has {len(value)} characters; at most {limit} fit (it is never cut: from position {limit + 1} on " \
               "it would be lost)"
    if "\x00" in value:
        return f"contains a NUL character at position {value.index(chr(0)) + 1}, which PostgreSQL cannot store"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains a lone surrogate at position {exc.start + 1} (not valid Unicode text)"
    return None


def check_name(value: str, what: str, example: str, limit: int = MAX_NAME) -> str:
    """``value`` when the call log can store it; else a ``ValueError`` that says why and shows a valid one."""
    problem = name_problem(value, limit)
    if problem is not None:
        shown = repr(value[:60] + "…" if isinstance(value, str) and len(value) > 60 else value)
        raise ValueError(f"{what} {shown} {problem}; for example {example}")
    return value


def storable_name(value: str, limit: int = MAX_NAME) -> str:
    """A derived name made storable: lone surrogates and NULs replaced, cut to ``limit`` characters."""
    text = value.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 1] + "…"
