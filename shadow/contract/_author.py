"""The author's words: errors the model already reads in legacy, and their text fitted to the contract's limits."""

from __future__ import annotations

import functools
import re
from types import MappingProxyType
from typing import Final

from shadow._redact import scrub_text
from shadow.contract._codes import Code
from shadow.contract._masking import has_blob, without_blobs
from shadow.contract._payloads import MAX_MESSAGE_CHARS, MAX_SENTENCES

#: A framework's model-facing exceptions, by the qualified name of a class in the exception's MRO (no framework is
#: imported), and the code an unplaced one takes: ``None`` serves ``rejected`` and counts it unmapped (PydanticAI's
#: ``ToolFailed`` too: a terminal failure the model reads); a ``ModelRetry`` asks the model to correct its call, so
#: it is a ``validation_error`` by its type.
SHOWN_EXCEPTIONS: Final[MappingProxyType[str, Code | None]] = MappingProxyType({
    "fastmcp.exceptions.ToolError": None,
    "mcp.server.mcpserver.exceptions.ToolError": None,
    "mcp.server.fastmcp.exceptions.ToolError": None,
    "langchain_core.tools.base.ToolException": None,
    "pydantic_ai.exceptions.ModelRetry": Code.VALIDATION_ERROR,
    "pydantic_ai.exceptions.ToolFailed": None,
})
_NOT_SHOWN: Final = "-"
_shown: dict[type[BaseException], str] = {}
_MAX_CACHED: Final = 1024

#: What a legacy text starts with that the payload says already (``ok: false``): dropped from the message.
_LEADING: Final = re.compile(r"^\s*(?:\*\*|__)?(?:error executing tool [^\s:]+|error|exception)\s*:\s*(?:\*\*|__)?\s*",
                             re.IGNORECASE)
_TRACEBACK: Final = re.compile(r"^\s*Traceback \(most recent call last\)")
_SENTENCE_END: Final = re.compile(r"[.!?]+(?=\s|$)")
_READ: Final = 4096
_CACHED_TEXT: Final = 512  # longer texts are fitted each time (the cache holds at most _MAX_CACHED short ones)
_CUT: Final = "\u2026"


def shown_name(exc: BaseException) -> str | None:
    """The ``SHOWN_EXCEPTIONS`` name ``exc`` is an instance of, or ``None`` for an exception the model never saw."""
    cls = type(exc)
    name = _shown.get(cls)
    if name is None:
        name = next((n for k in cls.__mro__ if (n := f"{k.__module__}.{k.__qualname__}") in SHOWN_EXCEPTIONS),
                    _NOT_SHOWN)
        if len(_shown) < _MAX_CACHED:
            _shown[cls] = name
    return None if name == _NOT_SHOWN else name


def fit_message(text: object) -> str | None:
    """The author's text as a payload message: credentials scrubbed, a leading ``Error:`` dropped, whitespace
    folded, at most two sentences and 400 characters (cut with an ellipsis); ``None`` when nothing usable is left
    (no words: nothing or a bare number, whose code's own message says more; or a traceback, which never goes to
    the model). A plain ``str`` is fitted once per text (error texts repeat: the same few messages make most of a
    tool's errors)."""
    if type(text) is str and len(text) <= _CACHED_TEXT:  # exactly str: a ``Public`` text (unscrubbed) never is
        return _fit_text(text)
    return _fit(text)


@functools.lru_cache(maxsize=_MAX_CACHED)
def _fit_text(text: str) -> str | None:
    return _fit(text)


def _fit(text: object) -> str | None:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str) or _TRACEBACK.match(text):
        return None
    # a blob (base64, a data URL) is cut short after scrubbing, so no credential is shown in part, and the words
    # after it, often the reason ("... exceeds 1000 bytes"), are kept
    head = text[:_READ * 16] if len(text) > _READ and has_blob(text[:_READ]) else text[:_READ]
    folded = " ".join(_LEADING.sub("", without_blobs(scrub_text(head), keep=40)[:_READ], count=1).split())
    if not any(c.isalpha() for c in folded):  # nothing, or a bare number ("Error: 503"): the code's own words say more
        return None
    if len(folded) > MAX_MESSAGE_CHARS:
        cut = folded[: MAX_MESSAGE_CHARS - 4]
        space = cut.rfind(" ")
        folded = (cut[:space] if space > MAX_MESSAGE_CHARS // 2 else cut).rstrip() + " " + _CUT
    ends = [m.end() for m in _SENTENCE_END.finditer(folded)]
    if len(ends) > MAX_SENTENCES:  # counted after the cut, which can leave a sentence end before the ellipsis
        folded = folded[: ends[MAX_SENTENCES - 1]] + " " + _CUT
    return folded
