"""The phrase table: what an error text reads as (code and reason), shared by the rules, inventory and suggest."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Final

from shadow.contract._codes import Code

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>()\[\]]+")
_PATH = re.compile(r"(?<![\w.:/<>-])(?:~|\.{1,2})?/(?:[\w.@+%~-]+/?)+")
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:\\(?:[\w.@+ -]+\\?)+")
#: Phrases are read in the start of a text; an error's meaning is stated there, and a long text stays cheap.
MAX_READ: Final = 4096


@dataclass(frozen=True, slots=True)
class Phrase:
    """One row: a pattern searched in the masked error text, the code it means, why, and a remedy draft."""

    pattern: re.Pattern[str]
    code: Code
    reason: str
    remedy: str


@functools.lru_cache(maxsize=512)
def mask_locations(text: str) -> str:
    """The start of the text (``MAX_READ`` characters) with URLs and paths replaced by ``<url>`` and ``<path>``,
    so a word inside one (a host under ``.invalid``, a directory named ``not-found``) never decides the code."""
    text = text[:MAX_READ]
    return _PATH.sub("<path>", _WINDOWS_PATH.sub("<path>", _URL.sub("<url>", text)))


def _p(pattern: str, code: Code, reason: str, remedy: str) -> Phrase:
    return Phrase(re.compile(pattern, re.IGNORECASE | re.MULTILINE), code, reason, remedy)


_V, _NF, _FP = Code.VALIDATION_ERROR, Code.NOT_FOUND, Code.FAILED_PRECONDITION
_STATUS_LINE = r"(?:status(?: code)?:?|returned error:?|http(?:/[\d.]+)?|^(?=(?-i:\d{3} [A-Z])))\s*"

#: Ordered: the first row whose pattern is found wins, so specific phrases come before broad ones.
PHRASES: Final[tuple[Phrase, ...]] = (
    # A value that cannot be, said with "does not exist": the argument is wrong, nothing is missing.
    _p(r"does not exist in .*(?:clock change|daylight|dst)|(?:time|date|day)\b.{0,40}\bdoes not exist\b|"
       r"\bnot a valid (?:date|time)", _V, "a time or value that cannot be (\"does not exist\" about a value)",
       "The value {value} cannot be used here. Pass a value that exists, for example a time outside the gap."),
    _p(r"\bcolumn \S+ does not exist", _V, "a misspelt column in the query argument",
       "The query names a column {value} that the table does not have. Correct the query, for example check "
       "the column names first."),
    # A precondition in the current state: the call is fine, the state is not.
    _p(r"no changes (?:staged|added)|nothing (?:added )?to commit|head is detached|detached head|"
       r"would be overwritten by (?:checkout|merge)|commit your changes or stash|uncommitted changes|"
       r"working (?:tree|directory) (?:is )?(?:not clean|dirty)|not in a clean state|must be empty|"
       r"is not empty\b|not (?:yet )?initiali[sz]ed|not ready\b|is locked by|already in progress",
       _FP, "a precondition of the current state does not hold",
       "The current state does not allow this yet: {value}. Do the required step first, for example check the "
       "status and stage or clean up."),
    _p(r"database is locked|\bSQLITE_BUSY\b", Code.UPSTREAM_UNAVAILABLE, "a busy database: retry shortly",
       "The database is busy. Make the identical call again shortly."),
    # Quotas and rate limits.
    _p(r"quota|insufficient[_ ]funds|billing|spend(?:ing)?[ _]limit|credit balance|payment required",
       Code.QUOTA_EXCEEDED, "a quota or spending limit is used up",
       "A usage quota or spending limit is used up. Tell the user; retrying will not help."),
    _p(r"rate[ _-]?limit|too many requests|slow down|throttl", Code.RATE_LIMITED, "a rate limit",
       "Too many calls in a short time. Wait and make the identical call again."),
    # HTTP statuses written into the text ("status code 404", "returned error: 403", "502 Bad Gateway").
    _p(_STATUS_LINE + r"(?:408|504|524)\b", Code.UPSTREAM_TIMEOUT, "an HTTP timeout status in the text",
       "The service did not answer in time. Make the identical call again."),
    _p(_STATUS_LINE + r"(?:502|503|500)\b", Code.UPSTREAM_UNAVAILABLE, "an HTTP 5xx status in the text",
       "The service failed or is overloaded. Make the identical call again shortly."),
    _p(_STATUS_LINE + r"(?:404|410)\b", _NF, "an HTTP 404 status in the text",
       "Nothing exists at {value}. Check the address, for example list what exists first."),
    _p(_STATUS_LINE + r"401\b", Code.UNAUTHENTICATED, "an HTTP 401 status in the text",
       "The service did not accept the credentials. Ask the user to renew them."),
    _p(_STATUS_LINE + r"403\b", Code.PERMISSION_DENIED, "an HTTP 403 status in the text",
       "The service refused access. Ask the user for access instead of retrying."),
    _p(_STATUS_LINE + r"429\b", Code.RATE_LIMITED, "an HTTP 429 status in the text",
       "The service is rate limiting. Wait and make the identical call again."),
    _p(_STATUS_LINE + r"(?:413|414|431)\b", Code.PAYLOAD_TOO_LARGE, "an HTTP 413 status in the text",
       "The request is too large. Send a smaller input, for example fewer items per call."),
    _p(_STATUS_LINE + r"409\b", Code.CONFLICT, "an HTTP 409 status in the text",
       "The request conflicts with the current state. Read the current state first."),
    _p(_STATUS_LINE + r"(?:400|422)\b", _V, "an HTTP 400 status in the text",
       "The service rejected the request as invalid. Correct the arguments."),
    # Timeouts, then connection failures (a statement timeout is a timeout, not a cancellation).
    _p(r"\bETIMEDOUT\b|\bESOCKETTIMEDOUT\b|ReadTimeout|ConnectTimeout|WriteTimeout|PoolTimeout|timed? ?out|"
       r"timeout|deadline exceeded|Gateway Time-?out", Code.UPSTREAM_TIMEOUT, "a timeout",
       "A service this tool depends on did not answer in time. Make the identical call again."),
    _p(r"\bECONNREFUSED\b|\bECONNRESET\b|\bENOTFOUND\b|\bEAI_AGAIN\b|\bEHOSTUNREACH\b|\bENETUNREACH\b|"
       r"ConnectError|RemoteProtocolError|Name or service not known|name resolution|could not resolve host|"
       r"nodename nor servname|connection (?:refused|reset|error|issue|aborted|closed)|"
       r"all connection attempts failed|could not connect|failed to connect|server disconnected|"
       r"service (?:is )?unavailable|\bunavailable\b|service down|bad gateway|broken pipe",
       Code.UPSTREAM_UNAVAILABLE, "a service could not be reached",
       "A service this tool depends on could not be reached. Make the identical call again shortly."),
    # Who may do what.
    _p(r"authentication failed|bad credentials|unauthori[sz]ed|unauthenticated|not authenticated|"
       r"invalid (?:api )?(?:key|token)|expired (?:token|credentials)|log ?in required", Code.UNAUTHENTICATED,
       "credentials are missing, invalid or expired", "The credentials were not accepted. Ask the user to renew "
       "them."),
    _p(r"\bonly \S+(?: \w+)? (?:are|is) (?:allowed|supported)|illegal operation on a directory|\bEISDIR\b|"
       r"unsupported (?:format|type|media|file)|not a supported", Code.UNSUPPORTED_INPUT,
       "a kind of input this tool does not handle",
       "This tool does not handle {value}. Use a supported kind of input or a different tool."),
    _p(r"permission denied|\bEACCES\b|\bEPERM\b|access denied|forbidden|not allowed|outside (?:the )?allowed|"
       r"not permitted|refused to|not a public address|denied to", Code.PERMISSION_DENIED,
       "the caller is not allowed to do this", "Access to {value} is not allowed. Ask the user for access "
       "instead of retrying."),
    # What exists already, and conflicts with the current state.
    _p(r"already exists|\bEEXIST\b|duplicate|unique constraint|UNIQUE constraint failed", Code.ALREADY_EXISTS,
       "the thing the call would create exists already", "{value} exists already. Use the existing one or "
       "choose another name."),
    _p(r"\bconflict|modified concurrently|concurrent update|could not serialize|version mismatch|"
       r"\[rejected\]|updates were rejected|could not find exact match|out of date|stale", Code.CONFLICT,
       "the call conflicts with the current state", "The item changed since it was read. Read {value} again "
       "and retry with the fresh state."),
    # What the tool cannot do at all ("method not found" is not a missing item).
    _p(r"not implemented|method not found|not supported", Code.NOT_IMPLEMENTED,
       "the tool does not support this operation", "This operation is not supported. Use a different tool."),
    # What does not exist.
    _p(r"did not resolve to an object|no item found|no such (?:ref|branch|file|table|column|key|"
       r"directory|user|remote|tag|commit|object|path|record|item|resource|tool)|\bENOENT\b|"
       r"pathspec .* did not match|not a git repository|unknown (?:revision|id|item|user|file|tool|ref)|"
       r"malformed object name|not found|no such\b|does not exist|doesn't exist|missing (?:record|item)|"
       r"^\s*<path>\s*$", _NF, "the thing the call names does not exist",
       "Nothing named {value} exists. Check the name, for example list what exists first."),
    _p(r"\bcancel+(?:ed|ing)\b|\baborted\b", Code.CANCELLED, "the call was cancelled",
       "The call was cancelled. Do not repeat it unless the user asks."),
    _p(r"too large|too long|too big|exceeds (?:the )?(?:maximum|max|limit) size|entity too large",
       Code.PAYLOAD_TOO_LARGE, "the input is larger than allowed",
       "The input is too large. Send a smaller one, for example fewer items per call."),
    # A malformed argument (the broadest: last).
    _p(r"^\s*invalid\b|\binvalid\b|must be|required|missing|malformed|bad request|expected|syntax error|"
       r"cannot start with|validation error|not a valid|out of range|unrecognized", _V,
       "an argument is missing or malformed", "The argument {value} is not valid. Correct it, for example as "
       "the tool's input schema describes it."),
)


def propose(text: str) -> Phrase | None:
    """The first phrase found in ``text`` (URLs and paths masked), or ``None``."""
    masked = mask_locations(text)
    for phrase in PHRASES:
        if phrase.pattern.search(masked):
            return phrase
    return None
