"""The phrase table's first rows: values that cannot be, service failures, limits and HTTP statuses written in a text.

They come before every other row: a service failure (timed out, 5xx, unavailable) outranks any domain word.
"""

from __future__ import annotations

from typing import Final

from shadow.contract._codes import Code
from shadow.contract._phrase import Phrase

_p = Phrase
_V, _NF, _FP = Code.VALIDATION_ERROR, Code.NOT_FOUND, Code.FAILED_PRECONDITION

#: What precedes an HTTP status written in a text ("status 503", "returned 404", "Error (500)"): every status row
#: starts with it, so the reading can tell status rows from rows of words.
STATUS_LINE = (r"(?:status(?: code)?:?|returned(?: error| status| code| http)*:?|http(?:/[\d.]+)?|"
               r"\b(?:error|code)\s*[:(]?|\bfailed \((?=\d{3}\))|\w(?:Error|Exception)\(|^(?=(?-i:\d{3} [A-Z])))\s*")
#: The words that name a service a tool depends on.
SERVICE = (r"(?:service|server|api|backend|upstream|database|db|host|endpoint|site|website|provider|gateway|"
           r"cluster|instance|node|network)s?")

#: What follows "too many <noun>" when the noun is the call's own input ("too many columns selected"): a size the
#: call can shrink, never a used-up quota.
OWN_INPUT = (r"(?:selected|given|specified|provided|passed|requested|supplied|included|in (?:the |this |your |a )?"
             r"(?:request|query|call|list|filter|selection|input|batch))")

#: In order: the first row whose pattern is found wins.
FIRST_ROWS: Final[tuple[Phrase, ...]] = (
    # A value that cannot be, said with "does not exist": the argument is wrong, nothing is missing.
    _p(r"does not exist in .*(?:clock change|daylight|dst)|(?:time|date|day)\b.{0,40}\bdoes not exist\b|"
       r"\bnot a valid (?:date|time)", _V, "a time or value that cannot be (\"does not exist\" about a value)",
       "The value {value} cannot be used here. Pass a value that exists, for example a time outside the gap."),
    _p(r"\bcolumn \S+ does not exist|\bhas no column|\bunknown column", _V, "a misspelt column in the query argument",
       "The query names a column {value} that the table does not have. Correct the query, for example check "
       "the column names first."),
    # Service failures outrank every domain word.
    _p(r"database is locked|\bSQLITE[ _]BUSY\b", Code.UPSTREAM_UNAVAILABLE, "a busy database: retry shortly",
       "The database is busy. Make the identical call again shortly."),
    _p(STATUS_LINE + r"(?:408|504|524)\b", Code.UPSTREAM_TIMEOUT, "an HTTP timeout status in the text",
       "The service did not answer in time. Make the identical call again."),
    _p(STATUS_LINE + r"(?:502|503|500)\b", Code.UPSTREAM_UNAVAILABLE, "an HTTP 5xx status in the text",
       "The service failed or is overloaded. Make the identical call again shortly."),
    _p(r"\bETIMEDOUT\b|\bESOCKETTIMEDOUT\b|ReadTimeout|ConnectTimeout|WriteTimeout|PoolTimeout|Timeout(?:Error|"
        r"Exception)|\btimed[ -]?out\b|"
       r"(?:request|read|connect(?:ion)?|navigation|gateway|operation|query|statement|socket|server|upstream|"
       r"network|api|proxy|response)[ _-]?time-?out|"
       r"\btime-?out (?:<value> )?(?:of|after|exceeded|expired|error|waiting|while|"
       r"reached)|^\s*time-?out\b(?! (?:must|should|is required|value|parameter|argument))|deadline exceeded|"
       r"\b(?:event|crawl|livecrawl|page|load|render|wait|idle|lock|job|"
       r"task|run|tool|execution|command|process|script|browser)[ _-]?time-?out\b|did not (?:finish|complete|respond|"
       r"answer|return|load)\b[^.\n]{0,40}\b(?:in time|within)\b|took too long|no (?:response|answer|reply) (?:within|"
       r"after)\b|not (?:received|completed|finished) (?:in time|within)\b|Gateway Time-?out|(?:execution|statement|"
       r"query|running) time "
       r"(?:exceeded|limit)|exceeded the (?:maximum )?(?:execution )?time|time limit (?:exceeded|reached)|"
       r"exceeded (?:its |the )?time ?limit\b|"
       r"\b(?:due to|because of) (?:a |the )?time-?out\b|\bwithin the (?:configured |allowed |given )?time-?out\b",
       Code.UPSTREAM_TIMEOUT, "a timeout",
       "A service this tool depends on did not answer in time. Make the identical call again."),
    # A failed login named as the cause ("Could not connect. Last error: Authentication failed.") is the cause.
    _p(r"\bauthentication failed\b|\bbad credentials\b|\binvalid[ _]grant\b|\brejected (?:the |your |our )?(?:\w+ )?"
       r"(?:token|credentials|api key|password)\b", Code.UNAUTHENTICATED,
       "credentials are missing, invalid or expired", "The credentials were not accepted. Ask the user to renew "
       "them."),
    # Work the tool started is not ready yet: its "try again later" is a wait, not a failed service.
    _p(r"\b(?:is|are) still being (?:generated|prepared|processed|built|created|exported|indexed|computed)\b",
       _FP, "the result the call asks for is still being made", "{value} is not ready yet. Wait, then make the "
       "identical call again."),
    _p(r"\bDNS ?(?:error|failure|lookup (?:error|failed|failure)|resolution (?:error|failed|failure))\b|"
       r"\berror resolving (?:DNS|host(?:name)?)\b|\bECONNREFUSED\b|\bECONNRESET\b|\bENOTFOUND\b|\bEAI[ _]AGAIN\b|"
       r"getaddrinfo|socket hang up|\bECONNABORTED\b|"
       r"\bnetwork ?error\b|\bis (?:currently )?offline\b|(?:under|in|down for) maintenance|upstream (?:error|failure)|"
       r"^\s*(?:failed|unable) to (?:start|check|reach|contact|load|fetch|get|retrieve|complete|send|run|perform|"
       r"communicate)\b[^.!\n]{0,80}[.!]\s*(?:please )?try again\b|(?:returned|gave|sent) (?:an? )?(?:empty|"
       r"malformed|unexpected|incomplete) (?:response|reply|answer)|\b(?:ended|completed|closed) without (?:any )?"
       r"(?:content|data|result|response|output)\b|\bno (?:\w+ ){1,2}(?:was )?returned from\b|\bEHOSTUNREACH\b|"
       r"\bENETUNREACH\b|\bERR[ _]NAME[ _]NOT[ _]RESOLVED\b|\bERR[ _]CONNECTION[ _](?:REFUSED|RESET|CLOSED)\b|"
       r"\bERR[ _]INTERNET[ _]DISCONNECTED\b|\btransient (?:\w+ )?(?:error|failure)\b|\btemporary network\b|"
       r"ConnectError|Connection(?:Refused|Reset|Aborted)?Error|RemoteProtocolError|Name or service not known|"
       r"name resolution|could not resolve host|"
       r"nodename nor servname|connection to [^\n]{1,80}? (?:was )?refused|"
       r"connection (?:was |is |has been |had been )?(?:refused|reset|"
       r"error|issue|aborted|closed|failed|lost|"
       r"interrupted)|all connection attempts failed|(?:could not|couldn't|can't|cannot|unable to|failed to) connect|"
       r"server disconnected|"
       r"" + SERVICE + r" (?:is |are )?(?:temporarily |currently )?(?:unavailable|not available|down|unreachable|"
       r"overloaded)|"
       r"temporarily unavailable|\boverloaded\b|bad gateway|broken pipe|(?:internal )?server error|"
       r"\bfetch failed\b|\bno response\b(?! (?:\w+ ){0,3}found\b)|"
       r"\b(?:failed to|could not|couldn't|unable to|cannot) (?:parse|decode|read) (?:the )?(?:\w+ )?"
       r"(?:api |server |upstream |http )?response\b|\bbackend error\b|"
       r"empty response|\bunavailable \(?5\d\d|too many redirects|"
       r"^\s*(?:an? )?unknown (?:server )?error\b|try again later|retry later",
       Code.UPSTREAM_UNAVAILABLE, "a service could not be reached",
       "A service this tool depends on could not be reached. Make the identical call again shortly."),
    # Rate limits, then quotas and spending limits (never a product word alone: "billing" decides nothing).
    _p(r"rate[ _-]?limit|too many (?:requests|calls|attempts)|too many (?:concurrent|simultaneous|parallel) \w+|"
       r"slow down|throttl(?!\w*(?: \w+)? (?:is |are )?not supported)|excessive (?:requests|calls)|"
       r"(?:requests|calls) (?:are |were )?too (?:frequent|fast)|too (?:frequent|fast) (?:requests|calls)|"
       r"\bretry[- ]after\b|over (?:the )?(?:\w+ )?"
       r"(?:query|request|rate) limit", Code.RATE_LIMITED, "a rate limit",
       "Too many calls in a short time. Wait and make the identical call again."),
    _p(r"\bquota(?:s|[ _]\w+)?\b|spend(?:ing)?[ _]limit|billing (?:hard )?limit|budget (?:is )?(?:exceeded|"
       r"used up|exhausted)|"
       r"usage limit|credit balance is too low|out of credits|(?:exceeded|used up|run out of|ran out of|"
       r"no (?:remaining|more)|insufficient) (?:your |all |the )?(?:\w+ )?credits\b|\bcredits? limit|top up your|"
       r"upgrade (?:your|to a) (?:\w+ )?(?:plan|tier|subscription)|reached (?:the )?max(?:imum)? (?:number of )?"
       r"(?:executions|operations|tool calls)|credits? (?:are )?(?:exhausted|used up)|"
       r"payment required|(?:plan|subscription|account|monthly|daily) limit (?:reached|exceeded|hit)|"
       r"reached (?:the )?max(?:imum)? (?:number of )?(?:steps|iterations|turns)|\b(?:step|iteration|turn) limit|"
       r"\btoo many (?!open\b|opened\b|running\b|active\b|pending\b|concurrent\b|simultaneous\b|parallel\b|"
       r"failed\b|requests|calls|attempts|arguments|args|items|parameters|params|fields|values|characters|"
       r"chars|results|redirects|connections|open files|tokens|bytes|retries|elements|rows|records)\w+\b"
       r"(?! (?:open|opened|running|active|pending|in progress|at once|" + OWN_INPUT + r")\b)",
       Code.QUOTA_EXCEEDED, "a quota or spending limit is used up",
       "A usage quota or spending limit is used up. Tell the user; retrying will not help."),
    # HTTP statuses written into the text ("status code 404", "returned error: 403").
    _p(STATUS_LINE + r"(?:404|410)\b", _NF, "an HTTP 404 status in the text",
       "Nothing exists at {value}. Check the address, for example list what exists first."),
    _p(STATUS_LINE + r"401\b", Code.UNAUTHENTICATED, "an HTTP 401 status in the text",
       "The service did not accept the credentials. Ask the user to renew them."),
    _p(STATUS_LINE + r"403\b", Code.PERMISSION_DENIED, "an HTTP 403 status in the text",
       "The service refused access. Ask the user for access instead of retrying."),
    _p(STATUS_LINE + r"429\b", Code.RATE_LIMITED, "an HTTP 429 status in the text",
       "The service is rate limiting. Wait and make the identical call again."),
    _p(STATUS_LINE + r"(?:413|414|431)\b", Code.PAYLOAD_TOO_LARGE, "an HTTP 413 status in the text",
       "The request is too large. Send a smaller input, for example fewer items per call."),
    _p(STATUS_LINE + r"409\b", Code.CONFLICT, "an HTTP 409 status in the text",
       "The request conflicts with the current state. Read the current state first."),
    _p(STATUS_LINE + r"402\b", Code.QUOTA_EXCEEDED, "an HTTP 402 status in the text",
       "The account's credits or plan limit are used up. Tell the user; retrying will not help."),
    _p(STATUS_LINE + r"(?:412|423|428)\b", _FP, "an HTTP 412 status in the text",
       "The current state does not allow this. Read the current state first."),
    _p(STATUS_LINE + r"415\b", Code.UNSUPPORTED_INPUT, "an HTTP 415 status in the text",
       "The service does not take this kind of input. Send a supported kind."),
    _p(STATUS_LINE + r"501\b", Code.NOT_IMPLEMENTED, "an HTTP 501 status in the text",
       "The service does not support this operation. Use a different tool."),
    _p(STATUS_LINE + r"(?:400|422)\b", _V, "an HTTP 400 status in the text",
       "The service rejected the request as invalid. Correct the arguments."),
)
