"""The phrase table: what an error text reads as, with URLs and paths masked, through the built-in rules."""

from __future__ import annotations

import pytest

import shadow
from shadow.contract._codes import Code
from shadow.contract._masking import mask_locations
from shadow.contract._reading import propose


@pytest.mark.parametrize(("text", "code"), [
    ("No changes staged for commit", Code.FAILED_PRECONDITION),
    ("HEAD is detached, so there is no current branch", Code.FAILED_PRECONDITION),
    ("nothing to commit, working tree clean", Code.FAILED_PRECONDITION),
    ("Your local changes to the following files would be overwritten by checkout", Code.FAILED_PRECONDITION),
    ("Invalid time: 02:30 does not exist in Europe/Berlin on 2027-03-28 (skipped by a clock change)",
     Code.VALIDATION_ERROR),
    ("the date 2026-02-30 does not exist", Code.VALIDATION_ERROR),
    ('column "emial" does not exist', Code.VALIDATION_ERROR),
    ("user 42 does not exist", Code.NOT_FOUND),
    ("Ref 'x' did not resolve to an object", Code.NOT_FOUND),
    ("fatal: no such ref: origin/nope", Code.NOT_FOUND),
    ("no such branch 'dev'", Code.NOT_FOUND),
    ("ConnectError('[Errno -2] Name or service not known')", Code.UPSTREAM_UNAVAILABLE),
    ("connection to server failed: Connection refused", Code.UPSTREAM_UNAVAILABLE),
    ("connect ECONNREFUSED 127.0.0.1:5432", Code.UPSTREAM_UNAVAILABLE),
    ("connect ETIMEDOUT 10.0.0.1:443", Code.UPSTREAM_TIMEOUT),
    ("Request cancelled", Code.CANCELLED),
    ("502 Bad Gateway", Code.UPSTREAM_UNAVAILABLE),
    ("The issue must be open to add a comment", Code.FAILED_PRECONDITION),
    ("status must be open/done/all, got 'pending'", Code.VALIDATION_ERROR),  # the allowed values, not a state
    ("Error: node Call not allowed", Code.VALIDATION_ERROR),  # a calculator's expression, not the caller's rights
    ("Operation DELETE not allowed", Code.PERMISSION_DENIED),
    # a clinic desk's business rules (an outside check's layer, in neither corpus): the state, not a failed service
    ("Slot Unavailable", Code.FAILED_PRECONDITION),  # an exception class's name, as shadow inventory reads it
    ("Service Unavailable", Code.UPSTREAM_UNAVAILABLE),
    ("Dr. Patel has no free slot on 2025-03-14", Code.FAILED_PRECONDITION),
    ("Rx RX-668 has 0 refills remaining; the prescriber must renew it", Code.FAILED_PRECONDITION),
    ("Cancellation window closed", Code.FAILED_PRECONDITION),
    ("Error: patient P-1246 has no mobile number on file", Code.FAILED_PRECONDITION),
    ("Error: cannot book in the past (2025-02-28)", Code.VALIDATION_ERROR),
    ("Error: no patient P-1999", Code.NOT_FOUND),
    # web tools offline (an outside check: ddgs and pydantic-ai's web_fetch): the failed lookup, not a missing thing
    ("DNSError('error sending request for url (https://html.duckduckgo.com/html/) > error resolving DNS > DNS error: "
     "no records found for Query { name: Name(\"html.duckduckgo.com.\") }')", Code.UPSTREAM_UNAVAILABLE),
    ("error resolving DNS > DNS error: no records found for host", Code.UPSTREAM_UNAVAILABLE),
    ("Error: Failed to fetch https://h.invalid/?q=1: DNS resolution failed", Code.UPSTREAM_UNAVAILABLE),
    ('Failed to fetch not a url: URL protocol "" is not allowed. Only http:// and https:// are supported.',
     Code.VALIDATION_ERROR),  # a fixable argument, not a denial of access
    ("unsupported URL scheme 'ftp'", Code.UNSUPPORTED_INPUT),
    ("Failed to fetch http://127.0.0.1:9/admin: Access to private/internal IP address (127.0.0.1) is blocked.",
     Code.PERMISSION_DENIED),
    # generalised from the corpus's dev part
    ("Error parsing TOML: inline tables are not allowed here", Code.VALIDATION_ERROR),  # the text, not a denial
    ("Access denied: Document too large: 22MB exceeds limit of 10MB", Code.PAYLOAD_TOO_LARGE),
    ("Path points to a sensitive directory: /home/dev/.ssh", Code.PERMISSION_DENIED),
    ("Unknown output format 'docx'. Supported formats: pdf, html", Code.UNSUPPORTED_INPUT),
    ("Unknown resource: invoices/77", Code.NOT_FOUND),
    ('[{"code": "too_small", "minimum": 1, "type": "number", "message": "Number must be at least 1"}]',
     Code.VALIDATION_ERROR),  # a range, not a size
    ('[{"code": "too_big", "maximum": 100, "type": "array", "message": "Array must contain at most 100"}]',
     Code.PAYLOAD_TOO_LARGE),
    ("Page is not connected. The connection has been reset, retry the navigation.", Code.UPSTREAM_UNAVAILABLE),
])
def test_each_phrase_reads_as_its_code(text: str, code: Code) -> None:
    found = propose(text)
    assert found is not None and found.code is code


def test_urls_and_paths_are_masked_before_reading() -> None:
    assert mask_locations("see https://a.invalid/x?q=1 and /srv/not-found/a.txt") == "see <url> and <path>"
    found = propose("Failed to fetch https://api.invalid/not-found: RemoteProtocolError('Server disconnected')")
    assert found is not None and found.code is Code.UPSTREAM_UNAVAILABLE


def test_the_built_in_rules_read_prefixed_and_status_line_texts_as_errors() -> None:
    rules = shadow.Rules.default()
    for text, code in [("Database error: no such table: t", "not_found"), ("413 Request Entity Too Large",
                                                                          "payload_too_large")]:
        found = rules.translate_result(text)
        assert found is not None and found.error.code.value == code
    assert rules.translate_result("502 items were moved") is None  # a count, not a status line
    assert rules.translate_result("nothing to commit, working tree clean") is None  # plain output: a user rule decides


@pytest.mark.parametrize(("text", "code"), [
    # How arguments combine, and what a value may hold, outranks "not allowed" and "unsupported".
    ("Provide either query or url, not both", Code.VALIDATION_ERROR),
    ("start_date and days are mutually exclusive", Code.VALIDATION_ERROR),
    ("Spaces are not allowed in a branch name", Code.VALIDATION_ERROR),
    ("Unsupported operation: drop. Use 'add' or 'remove'.", Code.VALIDATION_ERROR),
    ("Valid values are: asc, desc", Code.VALIDATION_ERROR),
    ("Dates take the form YYYY-MM-DD", Code.VALIDATION_ERROR),
    ("Unable to parse the date. Please try again.", Code.VALIDATION_ERROR),  # a hint, no service failure
    ("payload must include a 'title' field", Code.VALIDATION_ERROR),
    ("Jinja TemplateSyntaxError: unexpected '}'", Code.VALIDATION_ERROR),
    ("timeout must be a positive integer", Code.VALIDATION_ERROR),  # the argument named timeout, not a timeout
    # A state the call needs: a step first, something still in use or pending, the balance a payment needs.
    ("Call open_document first.", Code.FAILED_PRECONDITION),
    ("Cannot refuel while the engine is running", Code.FAILED_PRECONDITION),
    ("Label 'urgent' is still in use by 4 issues", Code.FAILED_PRECONDITION),
    ("Booking not yet confirmed", Code.FAILED_PRECONDITION),
    ("No active session. Start one with start_session.", Code.FAILED_PRECONDITION),
    ("Transfer amount exceeds the available balance", Code.FAILED_PRECONDITION),
    ("Issue OPS-1 is blocked by OPS-2", Code.FAILED_PRECONDITION),  # a blocked issue, no access decision
    # Who the caller is, and what it may do.
    ("Your session has expired", Code.UNAUTHENTICATED),
    ("Password is incorrect", Code.UNAUTHENTICATED),
    ("Only the owner can delete this repository", Code.PERMISSION_DENIED),
    ("Redirect blocked: private hostname", Code.PERMISSION_DENIED),
    # What exists, what changed, what the install lacks, the tool's own crash.
    ("A label with this name exists already", Code.ALREADY_EXISTS),
    ("The page has been modified since it was read", Code.CONFLICT),
    ("No module named 'pdfplumber'", Code.NOT_IMPLEMENTED),
    ("Markdown export is not yet supported", Code.NOT_IMPLEMENTED),
    ("'NoneType' object has no attribute 'get'", Code.INTERNAL_ERROR),
    ("Could not create the sprint. Check the server logs for details.", Code.INTERNAL_ERROR),
    ("Couldn't locate element #submit", Code.NOT_FOUND),
    ("Search returned 0 results", Code.NOT_FOUND),
    # Limits, quotas and services said in other words.
    ("ids may hold at most 50 ids; got 212", Code.PAYLOAD_TOO_LARGE),
    ("You have exceeded your monthly credits. Upgrade your plan.", Code.QUOTA_EXCEEDED),
    ("Blocked due to excessive requests", Code.RATE_LIMITED),
    ("Script timeout - no result received", Code.UPSTREAM_TIMEOUT),
    ("getaddrinfo EAI_AGAIN api.example.com", Code.UPSTREAM_UNAVAILABLE),
    ("SQLITE_BUSY: cannot commit transaction", Code.UPSTREAM_UNAVAILABLE),
    ("Failed to start the export. Please try again.", Code.UPSTREAM_UNAVAILABLE),
    ("The agent run was interrupted", Code.CANCELLED),
    # Learnt on agno's file and shell tools (dev): a file where a directory is expected, text that is not text,
    # an ambiguous or unbalanced argument, a file the call would create, a program the host lacks.
    ("Error: Not a directory: notes.txt", Code.UNSUPPORTED_INPUT),
    ("Binary file detected: dist/app.wasm", Code.UNSUPPORTED_INPUT),
    ("Error: old_str matches 3 times in a.py; make it more unique", Code.VALIDATION_ERROR),
    ("The name 'main' is ambiguous", Code.VALIDATION_ERROR),
    ("regex parse: unbalanced parenthesis", Code.VALIDATION_ERROR),
    ("Error: file exists and overwrite=False: a.txt", Code.ALREADY_EXISTS),
    ("Install ripgrep to use this tool.", Code.NOT_IMPLEMENTED),
    # Learnt on mcp-server-kubernetes (dev): kubectl's and helm's own wording.
    ("The connection to the server 10.1.2.3:6443 was refused", Code.UPSTREAM_UNAVAILABLE),
    ("ids must be an array of strings; string ids are not supported", Code.VALIDATION_ERROR),
    ("cannot evict pods with local data (use --force to override)", Code.FAILED_PRECONDITION),
    # Taken by someone else is no "the work is done": another choice is asked for, never already_exists's stop.
    ("cannot re-use a name that is still in use", Code.CONFLICT),
    ("room R1 is taken", Code.CONFLICT),
    ("seat 12A already booked", Code.CONFLICT),
    ("user ana is already a member of the team", Code.ALREADY_EXISTS),
    ("Unexpected resource type: cronjob", Code.UNSUPPORTED_INPUT),
])
def test_wording_families_read_as_their_code(text: str, code: Code) -> None:
    found = propose(text)
    assert found is not None and found.code is code

