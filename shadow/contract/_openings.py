"""Whether a text a tool returned reads as an error: its opening, read after any Markdown or symbol."""

from __future__ import annotations

import re
from typing import Final

ERROR_TEXT_PREFIX = re.compile(
    r"^\s*(?:(?:error|exception|traceback|failed|failure|fatal)\b|[A-Za-z]{1,40} (?:error|exception)\s*:)",
    re.IGNORECASE)
#: An exception's class name opening the text, as a tool that returns ``f"{type(e).__name__}: {e}"`` writes it:
#: ``OperationalError: no such table``, ``SQLite DatabaseError: UNIQUE constraint failed``, ``sqlite3.Error:``,
#: ``ProgrammingError (Parameter/Syntax): ...``. Case-sensitive: a CamelCase name ending in Error or Exception.
EXCEPTION_OPENING = re.compile(
    r"(?:[A-Za-z][\w-]* ){0,2}(?:[a-z_]\w*\.)*(?:[A-Z][A-Za-z0-9]*?)?(?:Error|Exception)(?: \([^)\n]{0,40}\))?\s*:")
#: An exception's repr as the whole text, as a tool that returns ``repr(e)`` writes it: ``KeyError('nme')``,
#: ``ZeroDivisionError('division by zero')``, ``requests.exceptions.ConnectionError(MaxRetryError(...))``.
EXCEPTION_REPR = re.compile(r"\s*(?:[a-z_]\w*\.)*[A-Z][A-Za-z0-9]*?(?:Error|Exception)\([^\n]*\)\s*\Z")
#: A bare HTTP status line as the whole text: ``502 Bad Gateway``, ``413 Request Entity Too Large``.
STATUS_LINE = re.compile(r"^\s*[45]\d\d(?: [A-Z][\w-]*)+\s*$")
#: Markup a returned text may open with before its first word: Markdown emphasis, headings and quotes, a symbol
#: such as an emoji (``**Error:**``, ``## Failed``, ``\u274c Could not ...``).
_MARKUP: Final = re.compile(r"[\s*_#>`\u2022\u2190-\u2bff\u2700-\u27bf\ufe0f\U0001f000-\U0001faff]*")
#: An opening that says the call did not happen: an ``Error``/``Failed`` word, it cannot, an error occurred, an
#: argument is not given or missing, invalid or unsupported (with what follows, or as a sentence: "Invalid paragraph
#: index."), a refused connection or login, a rate limit, access refused. Never an empty result ("No results found",
#: "No rows returned", "Could not find any ..."): those are success data.
_OPENING: Final = re.compile(
    ERROR_TEXT_PREFIX.pattern.removeprefix(r"^\s*")
    + r"|(?:could not|couldn't|cannot|can't|can ?not|unable to|not able to|failed to)\b(?! find any\b)"
    r"|an? (?:unexpected |unknown |internal |fatal )?(?:error|exception|problem) (?:has )?(?:occurr?ed|happened|was"
    r" (?:raised|encountered|thrown))"
    r"|(?:please|kindly) (?:provide|specify|supply|enter|pass|give|set|add)\b"
    r"|(?:no|missing) (?:\w+ ){1,3}(?:was |were )?(?:provided|given|specified|supplied|passed)\b"
    r"|missing (?:required )?(?:\w+ )?(?:parameter|argument|field|value|input|option)s?\b|no such \w"
    r"|rate limit(?:ed| (?:exceeded|reached|hit))|(?:authentication|login|sign[- ]?in) (?:required|failed)\b"
    r"|connection (?:refused|reset|closed|failed|timed out|error)\b|bad request\b|(?:session|token) (?:has )?expired"
    r"|time-?out (?:after|of|exceeded|expired|reached|waiting)\b"
    r"|(?:invalid|unsupported|unknown|unrecogni[sz]ed|illegal|malformed) (?:\w+ ){0,3}\w+"
    r"(?: ?:(?!\s*\d+\s*(?:$|\n))|\.(?:\s|$))"
    r"|only (?:\w+ ){1,4}(?:is|are) (?:supported|allowed|permitted)\b"
    r"|(?:permission|access) (?:denied|required|refused)\b|security violation\b"
    r"|not (?:authori[sz]ed|permitted|allowed)\b|(?:unauthori[sz]ed|forbidden)(?=\s*(?:[:.(!\u2014-]|$|to |for ))",
    re.IGNORECASE)
#: The end of a text's first clause: a line break, a comma, a colon, ``!``/``?``, a full stop before a space.
_CLAUSE_END: Final = re.compile(r"[\n,;:!?]|\.(?:\s|$)")
#: What a first clause says of its subject when the call did not happen: "Sheet 'Q3' not found", "Directory
#: drafts does not exist", "Execution failed", "Command timed out after 30 seconds", "Email body cannot be empty"
#: (not "2 tests failed": a count opens).
_CLAUSE_FAILURE: Final = re.compile(
    r" (?:was |were |is |are )?(?:not (?:provided|given|specified|supplied)|not found|(?:cannot|can't|must not|may "
    r"not) be (?:empty|blank|null|none)|timed out)\b| (?:does not|doesn't|do not|don't) exist"
    r"(?=\s*$|\s*[.,;:!(]| (?:in|at|on|for|under|anymore|yet)\b)"
    r"| (?:failed|errored)\b(?! (?:tests?|checks?|jobs?|runs?)\b)"
    r"| (?:could not|couldn't) be \w+(?:ed|en)\b| (?:is |are )?out of (?:range|bounds)\b| (?:is|are) required\b"
    r"| must (?:be|not be|contain|match|start with|end with)\b| (?:is|are) not available\b",
    re.IGNORECASE)
#: A metric named by a failure word ("Failed jobs: 0", "Error rate: 0.2% (last hour)"): a count, never an error.
_METRIC: Final = re.compile(r"(?:error|failed|failure)s? (?:[\w-]+ ){0,6}[\w-]+ ?: ?[\d.,]+ ?%?(?:\s*$|\s*[\n(,;])")
#: A later line that says what to do about the first ("Make sure Zotero is running."): still one message.
_REMEDY_LINE: Final = re.compile(r"\n\s*(?:make sure|please|try|check|ensure|verify|use|run|install|set|start|"
                                 r"restart|open|log in|sign in|see)\b", re.IGNORECASE)
#: A later line of the text that opens as an error (read up to the text's first few thousand characters).
_LATER_ERROR_LINE: Final = re.compile(r"\n\s*(?:error|exception|traceback)\b", re.IGNORECASE)
_NOTHING_MORE: Final = re.compile(r"\s*$")
_LINES: Final = 4096  # how far later lines are looked for
_HEAD: Final = 96  # an opening is read in the text's first characters
_FIRST_WORD: Final = re.compile(r"[\w'-]+")
#: The first words an ``_OPENING`` can start with (any other opening needs " error" or " exception" after it).
_OPENING_WORDS: Final = frozenset({
    "error", "errors", "exception", "traceback", "failed", "failure", "fatal", "could", "couldn't", "cannot", "can't",
    "can", "unable", "not", "an", "a", "please", "kindly", "no", "missing", "timeout", "time-out", "invalid",
    "unsupported", "unknown", "unrecognized", "unrecognised", "illegal", "malformed", "only", "permission", "access",
    "security", "unauthorized", "unauthorised", "forbidden", "rate", "authentication", "login", "sign", "signin",
    "connection", "bad", "session", "token"})
_PREFIX_WORDS: Final = frozenset({"error", "exception", "traceback", "failed", "failure", "fatal"})
_CLAUSE: Final = 64  # a first clause longer than this is read in its first characters only
#: One of these in a text's first characters, or no first clause can say the call failed (read without the rest).
_CLAUSE_WORDS: Final = re.compile(" not | fail| error| timed out| be |n't exist| out of | required| must ")


def error_string(text: str) -> bool:
    """Whether a returned text reads as an error: a bare HTTP status line, or an opening (after any Markdown or
    symbol) or a first clause that says the call did not happen ("Could not open ...", "Please provide a URL",
    "Sheet 'Q3' not found")."""
    start = _MARKUP.match(text).end()  # type: ignore[union-attr]  # a starred class always matches
    head = text[start:start + _HEAD].lower()
    first = _FIRST_WORD.match(head)
    if first is None:
        return False
    word = first.group()
    if (word in _PREFIX_WORDS or " error" in head or " exception" in head) and ERROR_TEXT_PREFIX.match(head):
        return _METRIC.match(head) is None  # "Failed jobs: 0" is a count
    if ("error" in head or "exception" in head) and (EXCEPTION_OPENING.match(text, start, start + _HEAD)
                                                     or EXCEPTION_REPR.match(text, start)):
        return True
    if word.isdigit():
        return STATUS_LINE.match(text) is not None  # a count or a status opens: never a clause that failed
    if word in _OPENING_WORDS and _OPENING.match(head):
        return _one_message(text, start)
    if _CLAUSE_WORDS.search(head, 0, _CLAUSE) is None:
        return False
    end = _CLAUSE_END.search(head, 0, _CLAUSE)
    return _CLAUSE_FAILURE.search(head, 0, end.start() if end else _CLAUSE) is not None and _one_message(text, start)


def _one_message(text: str, start: int) -> bool:
    """Whether the text is one line (a message, not a report of several lines that may name a failure in its
    first), or a later line opens as an error ("Execution failed\nFunction: f\nError: ..."), or the next line says
    what to do ("Could not connect to Zotero.\nMake sure Zotero is running.")."""
    line_end = text.find("\n", start, _LINES)
    if line_end < 0:
        return len(text) <= _LINES or "\n" not in text[_LINES:]  # a longer first line than this is one message
    return (_NOTHING_MORE.match(text, line_end) is not None or _REMEDY_LINE.match(text, line_end) is not None
            or _LATER_ERROR_LINE.search(text, line_end, _LINES) is not None)
