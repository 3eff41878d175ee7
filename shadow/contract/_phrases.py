"""The phrase table: what an error text reads as (code and reason), shared by the rules, inventory and suggest."""

from __future__ import annotations

from typing import Final

from shadow.contract._codes import Code, NextAction
from shadow.contract._phrase import Phrase
from shadow.contract._phrases_first import FIRST_ROWS, OWN_INPUT, SERVICE, STATUS_LINE

__all__ = ["PHRASES", "STATUS_LINE"]

_p = Phrase
_V, _NF, _FP = Code.VALIDATION_ERROR, Code.NOT_FOUND, Code.FAILED_PRECONDITION

#: Ordered: the first row whose pattern is found wins, so specific phrases come before broad ones, and a service
#: failure (timed out, 5xx, unavailable) comes before any domain word: "billing backend timed out" is a timeout
#: (those rows are ``FIRST_ROWS``).
PHRASES: Final[tuple[Phrase, ...]] = (
    *FIRST_ROWS,
    # A message that opens by naming the bad argument ("Invalid timezone: ...") is about that argument, whatever
    # the detail after the colon says.
    _p(r"^\s*(?:invalid|malformed|bad|missing) (?:\w+ ){0,2}\w+:|\bonly (?:one|a single)\b(?! \w+ (?:can|may) be "
       r"(?:running|open|active|in progress))|syntax error|"
       r"error in (?:your )?(?:\w+ )?syntax|invalid syntax|could not be parsed|parse error|failed to parse|"
       r"parsing (?:error|exception)|failed to decode|could not decode|invalid json|not valid json|"
       r"error while parsing|(?:unable|could not|couldn't|cannot|can't) (?:to )?parse|\bis not defined\b|"
       r"division by zero|cannot assign to|unsupported operand type|can only concatenate|"
       r"\bempty (?:\w+ ){0,2}(?:is|are) not (?:allowed|permitted|accepted)\b", _V,
       "the message opens by naming an invalid argument", "The argument {value} is not valid. Correct it, for "
       "example as the tool's input schema describes it."),
    # How the arguments combine, characters a value may not hold, a syntax error: the call's form is wrong.
    _p(r"SyntaxError\b|\b(?:contains?|has) duplicate (?:values|entries|items|ids|keys|elements|indices)\b|"
       r"\b(?:must|should) be an? (?:\w+ )?(?:array|list|string|integer|number|boolean|object|"
       r"dict(?:ionary)?)\b|\b(?:requires|expects) (?:\w+ )?(?:as )?an? (?:array|list|string|integer|number|boolean|"
       r"object|document)\b|"
       r"\b(?:unmatched|unbalanced|unterminated|unclosed)\b|\bunexpected (?:token|character|end|eof|"
       r"indent|<value>|symbol|identifier)\b|"
       r"\b(?:characters?|spaces?|symbols?|letters?|digits?|whitespace|duplicates?|nulls?|empty (?:values|strings)|"
       r"negative (?:values|numbers)) (?:are |is )?not (?:allowed|permitted|supported)\b|mutually exclusive|"
       r"\bonly (?:\w+ ){0,2}(?:alphanumeric|alpha-numeric|letters|digits|lowercase|uppercase|ascii|numbers|hyphens|"
       r"underscores|characters)\b[^.\n]{0,60}\b(?:are|is) (?:allowed|permitted|accepted)\b|"
       # "not allowed" said of a field, a value or a form element is about the call's form, not about access
       r"\b(?:extra|additional|unknown|nested|empty|negative|duplicate|trailing|leading) (?:\w+ )?(?:inputs?|fields?|"
       r"keys?|properties|parameters?|arguments?|values?|lists?|items?|offsets?|numbers?) (?:are |is )?not (?:allowed|"
       r"permitted)\b|^\s*(?:the )?(?:field|parameter|argument|key|property|option|value|input)s?\b[^.\n]{0,40}?"
       r"\b(?:is |are )?not (?:allowed|permitted)\b|\bnot (?:allowed|permitted) in (?:the |a |an )?(?:\w+ )?"
       r"(?:name|title|value|field|query|path|url|string|identifier|template|key|filename)s?\b|"
       r"\bnot allowed to (?:combine|mix)\b|\bproviding both\b|\bboth \S+ and \S+ (?:are |is )?not allowed\b|"
       r"\b(?:is|are) only supported (?:for|with|in) (?:the )?\w+ (?:action|mode|operation|option|type|command)\b|"
       r"\bcan only be used (?:when|with|if)\b|\b(?:provide|specify|pass)\b[^.\n]{1,80}\(or both\)|"
       r"\bexactly one of\b|^\s*please (?:specify|provide) (?:a|an|the|either|one)\b|\b(?:provide|specify|pass|supply|"
       r"give|set) (?:either|exactly one|only one|one of|"
       r"at least one|both)\b|\beither \S+ or \S+ (?:must|is required|should)|^\s*unsupported (?:operation|action|"
       r"mode|option|value|operator|command|method|parameter|argument)\b[^.\n]*\.\s*(?:use|valid|supported|allowed|"
       r"available|expected|must be|choose)\b|"
       r"\b(?:node|function|expression|character|token|keyword|construct)s? (?:type )?\S+ (?:is |are )?"
       r"not (?:allowed|permitted)\b", _V, "the arguments are combined or spelt wrongly",
       "The arguments are not valid together: {value}. Correct them, for example as the tool's input schema "
       "describes them."),
    # A precondition in the current state: the call is fine, the state is not.
    _p(r"no changes (?:staged|added)|nothing (?:added )?to commit|head is detached|detached head|"
       r"would be overwritten by (?:checkout|merge)|commit your changes or stash|uncommitted changes|"
       r"working (?:tree|directory) (?:is )?(?:not clean|dirty)|not in a clean state|must be empty|"
       r"is not empty\b|(?<!client )(?<!client is )not (?:yet )?initiali[sz]ed|not ready\b|is locked by|already in "
       r"progress|\brepository is empty\b|\bnot mergeable\b|"
       # "Install Node.js, then try again": a step the user can take, after which the call goes on (not a stop)
       r"\binstall [^\n]{1,60}?,? (?:and )?then (?:try|retry|run)\b",
       _FP, "a precondition of the current state does not hold",
       "The current state does not allow this yet: {value}. Do the required step first, for example check the "
       "status and stage or clean up."),
    # Who may do what.
    _p(r"authentication failed|bad credentials|unauthori[sz]ed|unauthenticated|not authenticated|"
       r"invalid[ _-]?auth|(?<!contains an )invalid (?:api[ _-]?)?(?:key|token|credentials)|rejected the (?:stored )?"
       r"(?:access |auth |api )?(?:token|key|credentials)\b|(?:api[ _-]?)?(?:key|token) (?:is |"
       r"was |has )?(?:invalid|not valid|expired|revoked)|expired (?:token|credentials)|log ?in required|not logged in|"
       r"credentials? (?:are |is )?(?:missing|invalid|expired)|authentication required|requires authentication|"
       r"please (?:log ?in|sign in|authenticate)|api[ _-]?key (?:is )?(?:required|missing|not (?:set|configured|"
       r"provided))|(?:no|missing) (?:valid )?(?:api[ _-]?key|access token|auth(?:entication)? token|"
       r"bearer token|credentials)\b|(?:api[ _-]?key|access token|credentials?|password) (?:is |are |was )?"
       r"(?:incorrect|wrong|rejected|not recogni[sz]ed)|(?:invalid|incorrect|wrong) (?:username|user name|password|"
       r"login|passcode)\b|log ?in failed|sign[ -]?in failed|authentication (?:error|failure)|(?:session|login) "
       r"(?:has )?expired|(?:must|need to|needs to) (?:be )?(?:log(?:ged)? ?in|sign(?:ed)? ?in|authenticated?)\b|"
       r"not (?:logged|signed) in|(?:log|sign) ?in (?:first|again)|^\s*(?:please )?re-?authenticate|"
       r"\brun `?[\w-]+ (?:auth )?log ?in\b|\binvalid (?:oauth |access |bearer |refresh )+token\b|"
       r"(?:failed|unable) to (?:obtain|get|fetch|refresh|acquire) (?:an? |the |new )?"
       r"(?:access|auth|oauth|bearer|refresh) token\b",
       Code.UNAUTHENTICATED,
       "credentials are missing, invalid or expired", "The credentials were not accepted. Ask the user to renew "
       "them."),
    _p(r"\bonly (?:\S+ ){1,4}(?:are|is) (?:allowed|supported|accepted)|\bunknown (?:\w+ )?(?:type|kind|format)\b"
       r"[^\n]{0,80}\bsupported (?:types|kinds|formats)\b|\b(?:queries|statements) (?:are|is) not "
       r"allowed|illegal operation on a directory|\bEISDIR\b|unsupported (?:\w+ ){0,2}(?:format|type|media|file|"
       r"protocol|scheme|url|statement|encoding|language|kind|codec|charset|extension|code page)|not a supported|"
       r"\b\w+ tool (?:can ?not|cannot) (?:run|handle|process|read|open)\b|"
       r"(?<!returned an )\bunexpected (?!response|result|return|reply)(?:\w+ )?(?:type|kind)\b"
       r"(?! (?:from|returned|in (?:the )?(?:response|reply|result)))|"
       r"\b(?:requires|expects|needs|accepts|takes|operates on|works (?:only )?(?:on|with)) (?:a |an )?(?:\w+ ){0,3}"
       r"\w+, not (?:a |an )?\w+|wrong kind of\b|"
       r"\bis (?:a|not a) (?:directory|folder)\b|not a regular file|\bnot a (?:file|directory|folder)\b|"
       r"\bbinary (?:file|data|content)\b|\bdecode (?:\w+ )?as text\b|must (?:point to|"
       r"be) an? (?:\w+ ){0,2}(?:file|image|"
       r"document|directory|folder)\b(?! path| name)|\bis not an? (?:\w+ )?(?:table|chart|image|"
       r"zip|pdf|csv|picture|cell|"
       r"document|"
       r"spreadsheet)(?: file)?\b|\b(?:is|appears to be) (?:a )?(?:damaged|corrupt(?:ed)?)\b|"
       r"does not contain (?:any )?text|"
       r"\bEOF marker not found\b|\binvalid elementary object\b|\b(?:could not|cannot|"
       r"unable to) extract (?:any )?text\b|"
       r"\bexpected [\w/*.+-]+ (?:mime[ -]?)?type, got\b|\bwith (?:an? )?(?:account|app|service)[ -]level "
       r"(?:auth|token|credentials)\b|\bare not supported for\b|"
       r"(?<!operation )(?<!method )(?<!feature )(?<!action )\bis not supported\b(?! on| by| in)|"
       r"\bis (?:simply|just) not supported\b|"
       r"\bmethod not allowed\b",
       Code.UNSUPPORTED_INPUT, "a kind of input this tool does not handle",
       "This tool does not handle {value}. Use a supported kind of input or a different tool."),
    # A URL argument whose scheme the tool does not take ('URL protocol "" is not allowed'): a fixable argument, not
    # a denial of access.
    _p(r"\b(?:url |uri |link )?(?:protocol|scheme) (?:<value> |\"[^\"\n]{0,20}\" |'[^'\n]{0,20}' |"
       r"[a-z][\w+.-]{0,15}:(?://)? )?(?:is )?not (?:allowed|supported|permitted)\b|"
       r"\bonly https?:// (?:and https?:// )?(?:urls? )?(?:are|is) "
       r"(?:supported|allowed)\b", _V, "a URL argument with a scheme the tool does not take",
       "{value}. Pass a URL with a scheme this tool takes, for example https://."),
    # A parser's "not allowed here" (YAML's "mapping values are not allowed here") is about the text it read, and a
    # size over the limit ("Access denied: File too large: 14MB exceeds 5MB") is the size: neither is a denial.
    _p(r"\bnot allowed here\b", _V, "the text an argument holds does not parse",
       "{value}: the text does not parse. Correct it and call again."),
    _p(r"\b(?:file|payload|request|body|input|content|image|document|attachment|upload|message)s? (?:is |was )?"
       r"too (?:large|big)\b", Code.PAYLOAD_TOO_LARGE, "the input is larger than allowed",
       "The input is too large. Send a smaller one, for example fewer items per call."),
    # Where a path or an address points (outside the allowed directories, a private address): the tool works for
    # others, so the model may pass another one or ask the user (never stop, which gives up on the tool). Each
    # pattern is one of the next row's, so the code is the same.
    _p(r"outside (?:of )?(?:the )?allowed(?! range)|not in the allowed|not on the allow|not a public address|"
       r"non-public address|(?:private|internal|reserved|link-local)(?:/[\w-]+)? (?:ip |network )?address(?:es)?|"
       r"loopback (?:address|host|ip)|blocks requests to|\bSSRF\b|"
       r"path traversal|(?:outside|escapes?|beyond) (?:of )?(?:the )?(?:\w+ )?(?:sandbox|workspace|root|"
       r"base director(?:y|ies))|allowed director(?:y|ies)|denied to (?:\w+[ _])?path\b|"
       r"access[ _-]?denied\b[^\n]{0,120}?\bnot within\b|\bpoints? to a sensitive (?:director(?:y|ies)|file|path|"
       r"location)\b",
       Code.PERMISSION_DENIED, "where a path or an address points is not allowed",
       "{value} is outside what this tool may reach. Pass one inside the allowed ones, or ask the user.",
       NextAction.ASK_USER),
    _p(r"permission denied|\bEACCES\b|\bEPERM\b|access[ _-]?denied|forbidden|(?<!method )not allowed|"
       r"outside (?:the )?allowed(?! range)|outside of (?:the )?allowed(?! range)|"
       r"\brequires (?:the )?--?allow[\w-]* (?:flag|option|setting)\b|not in the allowed|not on the allow|"
       r"not permitted|"
       r"(?:do|does|did)(?: not|n't) have (?:the )?(?:\w+ )?(?:permission|access|rights)|no permission|"
       r"not a member of|not a public address|non-public address|"
       r"(?:private|internal|reserved|link-local)(?:/[\w-]+)? (?:ip |network )?address(?:es)?|"
       r"loopback (?:address|host|ip)|"
       r"blocks requests to|denied to|"
       r"not authori[sz]ed (?:to|on|for)\b|is not authori[sz]ed|\bnot accessible by\b|"
       r"\b(?:operations?|writes?|deletes?|updates?|inserts?) (?:are|is) disabled\b|"
       r"missing (?:required )?scopes?\b|\blacks? (?:the )?(?:\S+ )?(?:scopes?|permissions?)\b|"
       r"insufficient (?:\w+ )?scopes\b|insufficient (?:scopes?|"
       r"permissions?|privileges?)|\bread-?only\b|\bblocked\b(?! by)|\bdisallowed\b|\bprohibited\b|"
       r"\b(?:is|was|were|been|are) denied\b(?! by (?:the )?user)|\bdenied (?:access|permission)|requires (?:admin|"
       r"administrator|owner|elevated|root|superuser) "
       r"(?:rights|privileges|access|permissions?|role)|(?:admin|administrator|owner) (?:rights|privileges|access|"
       r"role) (?:is |are )?required|only (?:the |its |their )?(?:owner|admin|administrator|creator|author|"
       r"organi[sz]er|host)s? "
       r"(?:can|may|is allowed)|\bSSRF\b|path traversal|(?:outside|escapes?|beyond) (?:of )?(?:the )?(?:\w+ )?"
       r"(?:sandbox|workspace|root|base director(?:y|ies))|allowed director(?:y|ies)|(?:allow|white)[ -]?list|"
       r"\bblocked by (?:the )?(?:\w+ )?(?:block|deny|black)[ -]?list\b|\boutside (?:of )?the active (?:\w+ )?"
       r"constraint\b|\b(?:file |local )?access is disabled\b",
       Code.PERMISSION_DENIED,
       "the caller is not allowed to do this", "Access to {value} is not allowed. Ask the user for access "
       "instead of retrying."),
    # What exists already, and conflicts with the current state.
    # Taken by someone else: the call's own work is not done, another choice is (never already_exists's stop).
    _p(r"already (?:taken|in use|used|booked)|\bis (?:already )?taken\b|name (?:that is |which is )?(?:still |"
       r"already )?in use|\bre-?use a name\b", Code.CONFLICT,
       "what the call asks for is taken or in use", "{value} is taken. Choose another one or ask the user."),
    # A unique key taken (a database's constraint): the row the call would add is not known to be the one the
    # user meant, so the work is not known to be done; the model may change the key or ask (never stop).
    _p(r"unique constraint|(?<!contains )(?<!contain )(?<!has )\bduplicate (?:key|entry)\b", Code.ALREADY_EXISTS,
       "a unique key the call uses is taken", "{value} is taken by an existing row. Use another or ask the user.",
       NextAction.ASK_USER),
    # A name taken ("a branch named 'feature' already exists"): the thing under that name is not known to be the
    # one the call meant; the model may choose another name, use the one there, or ask (never stop).
    _p(r"\b(?:named|called|with (?:the )?(?:same )?name|(?:the )?name)\b[^.\n]{0,60}?\b(?:already exists|exists "
       r"already)\b|\b(?:table|sheet|worksheet|workbook|column|index|view|schema|database|collection|bucket|branch|"
       r"tag|label|folder|directory|file|project|repository|repo|channel)s? (?:<value>|<path>|[\w.-]+) (?:already "
       r"exists|exists already)\b|\b(?:already exists|exists already)\b[^\n]{0,40}?[.;,]\s*(?:pass|set|use|"
       r"choose|pick|specify|give|rename)\b", Code.ALREADY_EXISTS, "a name the call uses is taken",
       "{value}: the name is taken. Choose another name, use the existing one, or ask the user.",
       NextAction.ASK_USER),
    _p(r"already exists|\bEEXIST\b|^\s*duplicate\b|(?<!contains )(?<!contain )(?<!has )\bduplicate (?:key|entry|"
       r"entries|name|value|id|record|row|column|"
       r"item|index|title|label|email|username)s?\b|\bis a duplicate\b|\bduplicates? (?:found|detected|exists?)\b|"
       r"unique constraint|UNIQUE constraint failed|already (?:reacted|added|"
       r"registered|a member|subscribed|starred|linked|installed|provisioned)|already exists?\b|"
       r"exists already|^\s*(?:the )?(?:file|directory|folder|path) exists\b|"
       r"already (?:present|defined|created|uploaded|stored)\b",
       Code.ALREADY_EXISTS,
       "the thing the call would create exists already", "{value} exists already. Use the existing one or "
       "choose another name."),
    _p(r"\bconflict|modified concurrently|concurrent update|could not serialize|version mismatch|"
       r"\[rejected\]|updates were rejected|could not find exact match|out of date|stale|deadlock|"
       r"is already (?:open|running|started|active)|\boverlaps?\b|must be incremented|(?:has|have|was|were) "
       r"(?:been )?(?:changed|modified|updated|edited) (?:since|by (?:another|someone)|elsewhere|concurrently)|"
       r"newer version|\betag\b|if-match", Code.CONFLICT,
       "the call conflicts with the current state", "The item changed since it was read. Read {value} again "
       "and retry with the fresh state."),
    # What the tool cannot do at all ("method not found" alone is JSON-RPC's; "payment method not found" is not).
    _p(r"not implemented|^\s*method not found|\(-32601\)|-32601:|\bnot installed\b|"
       r"\b(?:operation|method|feature|action|command|function|endpoint|capability|tool|api|request type)s? "
       r"(?:is |are )?(?:currently )?not supported\b|\bis not supported (?:on|by|in) "
       r"(?!(?:the |this )?(?:field|parameter|argument|value|column|key|format)s?\b)|"
       r"not supported (?:yet|by (?:this|the) (?:server|tool|api|version|backend))\b|"
       r"\b(?:deployment|cluster|instance|server version|installation) (?:does not|doesn't) support\b|"
       r"\b(?:is|are) required (?:for|to) [^.\n]{0,60}\bbut (?:was |were )?not found\b|install the optional|"
       r"\binstall \S+ to use\b|\bplease install\b|"
       r"\bbinary not found\b|\bnpx \S+ install\b|\bnot found (?:on|in) (?:the |your )?(?:system )?\$?PATH\b|"
       r"no module named|ModuleNotFoundError|\bImportError\b|\b(?:pip|npm|"
       r"uv|brew|apt(?:-get)?) "
       r"install\b|requires (?:the )?(?:optional )?\S+ (?:package|library|module|extra|dependency)\b|(?:library|"
       r"dependency|extra) (?:is )?(?:not available|missing)|not (?:yet )?(?:available|supported) in this (?:version|"
       r"release|build|install)|not yet (?:supported|implemented)|coming soon|\bunimplemented\b", Code.NOT_IMPLEMENTED,
       "the tool does not support this operation", "This operation is not supported. Use a different tool."),
    # The tool's own code broke: nothing the model changes will help.
    _p(r"object has no attribute|\bNoneType\b|is not subscriptable|\b(?:AttributeError|AssertionError|IndexError)\b|"
       r"unhandled (?:exception|error)|see (?:the )?(?:server |tool )?logs?\b|check (?:the )?(?:server )?logs? for "
       r"(?:details|more)|\bclient (?:is |was )?not initiali[sz]ed\b|"
       r"\binternal error\b(?! \()|^\s*unexpected response format\b|please report (?:this|it)\b|this is a bug",
       Code.INTERNAL_ERROR,
       "the tool's own code failed", "The tool failed unexpectedly. Tell the user the operation could not be "
       "completed."),
    _p(r"\bunknown (?:or \w+ )?(?:tool|prompt|resource|function)\b(?! (?:type|kind|format)s?\b)|"
       r"\btool (?:<value>|\S+) is not available\b|"
       r"\bno (?:open |active |such )?(?:\w+ ){0,2}named\b",
       _NF, "the tool, prompt or item the call names does not exist",
       "Nothing named {value} exists. Check the name, for example list what exists first."),
    # A value of the wrong form, said in words a business rule also uses ("cannot contain", "does not match").
    _p(r"\bcannot (?:contain|end with|start with|begin with|be empty|be blank|be null|be negative|be zero|"
       r"be longer|be shorter|be less|be greater|be more|be before|be after|be in the past|be the same|exceed)|"
       r"can only contain|must (?:start|begin|end) with|(?:should|must) (?:match|be different|be one of|be between)|"
       r"\bis not an? (?:\w+ )?(?:field|parameter|argument|option|column|property|key)\b|"
       r"not in the (?:\S+ ){0,2}schema|"
       r"\brequires (?:exactly|at least|at most)\b|\b(?:needs|requires) (?:a|an|the) (?:\w+ )?(?:name|value|id|list)\b|"
       r"\bbut (?:should be|expected)\b|\bbut (?:\w+ ){0,2}(?:should have|there are|expected)\b|\bhas fewer than\b|"
       r"\bnot a (?:number|integer|string|boolean)\b|^\s*empty \w+|\bempty (?:command|query|string|input|name|"
       r"value|list|sql|text)\b|"
       r"must be (?:different|one of|between)|\b(?:does|do)(?: not|n't) (?:match|add up)|mismatch|"
       r"constraint (?:failed|fails|violation)|\bviolates (?!foreign\b)(?:\w+ ){0,2}constraint\b|"
       r"\bimmutable (?:field|property|attribute)\b|"
       r"\b(?:can|may|must) (?:be|span|cover) at most [\d,]+ (?:seconds|minutes|hours|days|weeks|months|years)\b|"
       r"\b(?:operation|option|mode|action|command) requires <value>|\bno (?:\w+ ){0,2}(?:provided|given|specified)\b|"
       r"\bnot (?:provided|specified)\b|\b(?:valid|allowed|supported|accepted|available) (?:values|options|choices|"
       r"modes|operations|actions|units) (?:are|is|include)\b|\bexpected one of\b|\bone of the following\b|"
       r"\bchoose (?:from|one of|(?:only )?one\b)|\bYYYY\b|\bISO[ -]?8601\b|\b(?:in|use) the format\b|"
       r"\bmultiple (?:\w+ ){0,2}(?:found|match(?:es|ed)?)\b|"
       r"\b(?:could not|unable to|cannot) extract (?:\w+ ){1,3}from "
       r"(?:the )?(?:url|uri|link)\b|\bbut \S+ was (?:used|given|passed)\b|\bexpected format\b|\bformat "
       r"(?:should|must) be\b|\btoo (?:short|few|small)\b|(?:must|should) not be (?:empty|blank|null|none|negative|"
       r"zero)\b|\bis in the past\b|\bunknown (?:parameter|argument|field|option|property|key)s?\b|\bambiguous\b|"
       r"\bmatches \d+ (?:times|locations|places|occurrences)\b|"
       r"\bmore unique\b|\bare identical\b|\brequires? (?:a |an |the )?(?:<value> |\w+ )?(?:field|parameter|argument|"
       r"key|specification)\b|\bmust (?:have|include|contain)\b(?! (?:at most|no more|"
       r"fewer|less|up to))|\bneeds (?:a|an|at least|exactly)\b|\b(?:please )?do not (?:perform|pass|use|call|"
       r"include|send|combine|mix|specify)\b|\breserved (?:\w+ )?(?:name|word|keyword|character)s?\b|"
       r"\bnot recogni[sz]ed\b|\bunrecognised\b",
       _V, "an argument has the wrong form", "The argument {value} is not valid. Correct it, for example as the "
       "tool's input schema describes it."),
    # The state the call needs is not there yet: a step to do first, a thing still in use, nothing open or set up.
    _p(r"\bbefore (?:you can|calling|using|running|it can)\b|\b(?:select|choose|pick) (?:\w+ ){1,5}before \w+ing\b|"
       r"\b(?:has|have|had) not (?:yet )?been \w+|\btoo many (?:open|opened|running|active|pending) \w+|"
       r"\btoo many \w+ (?:open|opened|running|active|pending|in progress)\b|"
       r"\bnot \w+ yet\b|\bnot yet\b|\bhasn't been\b|\bstill (?:in use|"
       r"referenced|running|pending|open|active|processing|has|have|contains?)\b|\b(?:is|are) (?:being |still )?"
       r"(?:in use|used by|referenced by|pending|processing|in progress)\b|\bno (?:\w+ ){0,3}configured\b|"
       r"\bnot (?:been )?(?:configured|set up)\b|\bno (?:active|open|current|running|selected|"
       r"loaded) (?:\w+ )?(?:session|connection|"
       r"transaction|document|workbook|presentation|browser|page|tab|project|sheet|window|context|conversation|"
       r"game|job|run|instance|environment|repository|recording|trace)s?\b(?! (?:\w+ )?found)|\bout of sync\b|"
       r"\bnot (?:currently )?(?:running|started|connected|loaded|opened|attached|mounted|paired|selected)\b|"
       r"\bcannot (?:be )?\w+ (?:while|during|until|unless)\b|\bis blocked by\b|\bto override\b|"
       r"\bonly (?:\w+ ){1,3}(?:can|"
       r"may) be \w+|"
       r"\b(?:must|needs? to|"
       r"has to|have to) be (?:\w+ )?(?:open|opened|started|running|active|loaded|connected|unlocked|enabled|"
       r"approved|confirmed|verified|saved|committed|stopped|closed|logged in|selected)\b(?!/)|"
       r"\bexceeds? (?:the |your )?"
       r"(?:\w+ )?(?:available|remaining|current)? ?(?:\w+ )?(?:balance|funds)\b|\b(?:status|state) is (?:already )?"
       r"(?:<value>|pending|active|inactive|closed|open|delivered|shipped|cancel+ed|processed|completed|finished|"
       r"locked|archived|draft|published|suspended)\b", _FP, "the state the call needs does not hold yet",
       "The current state does not allow this yet: {value}. Do the required step first, or tell the user."),
    # A business rule: the state of the order, account or resource does not allow the call.
    _p(r"insufficient (?:\w+ ){0,3}(?:balance|funds|credit|stock|inventory|seats|capacity)|"
       r"not enough (?:\w+ ){0,3}(?:balance|funds|credit|seats|stock|inventory|capacity|space|room|tickets)|"
       r"balance (?:is )?(?:too low|not enough|insufficient)|\bnot (?:free|open|bookable|eligible)\b|"
       r"\bnot available (?:on|for|at|during|until|before|after|between)\b|"
       r"\bno longer (?:available|valid|active|open)|sold out|out of stock|fully booked|"
       r"\b(?:cannot|can't|can not) be (?:\w+ed|applied|used|modified|changed|done|undone|paid|sent) (?:any ?more|"
       r"(?:while|once|after|until|unless|since) (?:it|they|the|its|their)\b)|\b(?:cannot|can't|can not) be "
       r"(?:applied|used|redeemed|combined) (?:to|on|for|with) (?:this|that|the|your) \w+|"
       r"\b(?:is|are) (?:currently |still |now )?in (?:\w+ ){0,6}(?:mode|state|status)\b[^.\n]{0,40}\b(?:cannot|can't|"
       r"can not)\b|"
       r"\bis (?:already )?(?:closed|archived|expired|frozen|suspended|inactive|disabled|cancel+ed|locked)\b|"
       r"\bnot in (?:a |an |the |this )?(?:\w+ )?(?:state|status|channel|group|team|workspace|project)\b|"
       r"\bnon-\w+ \w+ cannot\b|\bno active \w+ selected\b|\b(?:service|feature|api) (?:is )?not enabled\b|"
       r"(?<!exist or )(?<!found or )\bhas expired\b|\bis not enabled\b|"
       r"\balready (?:been )?\w+ed\b|"
       r"\b(?:no|only \S+|just \S+) (?:\w+ ){0,2}left\b|\boutside (?:of )?(?:the )?(?:\S+ ){0,3}(?:window|"
       r"period|hours)\b|\b(?:above|exceeds|over|violates|against) (?:the )?(?:\w+ ){0,2}policy\b|not (?:allowed|"
       r"permitted) by (?:the )?"
       r"(?:\w+ )?policy", _FP, "a business rule: the current state does not allow this call",
       "The current state does not allow this: {value}. Tell the user, or change the state first."),
    # What does not exist.
    _p(r"did not resolve to an object|no item found|^\s*no \w+ <value> (?:in|on|under|for) (?:this|the)\b|"
       r"no such (?:ref|branch|file|table|column|key|"
       r"directory|user|remote|tag|commit|object|path|record|item|resource|tool)|\bENOENT\b|"
       r"pathspec .* did not match|not a git repository|unknown (?:revision|id|item|user|file|tool|ref|resource|"
       r"repository|branch|channel|project|issue|page|document|collection|index|prompt|workspace|order|product|"
       r"reference|link|database|table|cluster|model|agent|member|variable)|"
       r"malformed object name|not found|no such\b|does not exist|doesn't exist|no longer exists?\b|"
       r"\b(?:may|might) not exist\b|missing (?:record|item)|"
       r"\bno (?:\w+ )?results? (?:available|returned)\b|\bis not present in table\b|"
       r"(?:could not|couldn't|cannot|can't|unable to) find|\bno (?:\S+ ){1,5}(?:was |were )?found|zero results|"
       r"no results|\bthere (?:are|is) no \w+\b|(?:cannot|could not|can't) be (?:found|located)|"
       r"\bno (?:matching|matches|match found)\b|"
       r"nothing (?:found|matched)|\b(?:could not|couldn't|unable to|cannot|can't|failed to) (?:resolve|locate|"
       r"look ?up)\b|\bnot (?:a )?(?:known|registered|existing)\b|\bnot (?:in|on) (?:the |this |your )?(?:list|"
       r"catalog|database|index|system|inventory|records?|cart)\b|\b(?:returned|found|yielded) (?:no|0|zero) "
       r"(?:\w+ )?(?:results|matches|items|records|rows|entries)\b|\bno (?:\w+ ){0,2}(?:with|for|matching) (?:the |"
       r"that |this )?(?:given |provided |specified )?(?:id|name|key|title|email|identifier|criteria)\b|"
       r"^\s*<path>\s*$", _NF, "the thing the call names does not exist",
       "Nothing named {value} exists. Check the name, for example list what exists first."),
    # An abort or a cancellation with a stated cause ("aborted: file too large", "cancelled because ...") is read
    # by that cause; "aborted" alone is a cancellation only when the caller or the user did it.
    _p(r"(?:(?:was|been|were|got|is being) cancel+ed|cancel+ed by|(?:operation|request|call|task) (?:was )?cancel+ed|"
       r"^\s*cancel+ed\b|^\s*\w+ cancel+ed\b|\baborted by (?:the )?(?:user|client|caller)\b|"
       r"user (?:declined|rejected|cancel+ed)|declined by the user|"
       r"\buser (?:did not|didn't) (?:confirm|approve|accept)\b|"
       r"\binterrupted by (?:the )?user|(?:run|task|call|operation|execution) (?:was )?interrupted|user denied|"
       r"denied by (?:the )?user)(?![^.\n]{0,20}?\b(?:because|due to|since)\b|\s*:)",
       Code.CANCELLED, "the call was cancelled", "The call was cancelled. Do not repeat it unless the user asks."),
    # A zod issue of a number, a date or a bigint over or under its bound is the value's range, not a size.
    _p(r"\"code\": \"too[ _](?:big|small)\",[^}]{0,200}?\"type\": \"(?:number|bigint|date)\"", _V,
       "a number argument outside its range", "{value}: a number argument is outside its range. Pass one within it."),
    _p(r"too large|too long|too big|exceeds (?:the )?(?:maximum|max|limit|allowed)|exceeds (?:\d+|<value>) ?"
       r"(?:bytes|characters|chars|tokens|items|kb|mb|kib|mib|gb|gib)\b|\bmax(?:imum)? \w+ exceeded|entity too large|"
       r"memory limit|out of memory|memory exhaustion|\bover the (?:\w+ ){0,2}limit\b|exceeded (?:the )?limit|"
       r"exceeds? (?:the )?(?:(?!time\b)\w+ ){0,2}limit|size exceeded|;\s*the limit is|too much memory|"
       r"\bmore than [\d,.]+ (?:cells|rows|"
       r"formulas|items|pages|records|results|lines|files|steps)\b|\bover the (?:\w+ ){3}limit\b|\b(?:at most|no more "
       r"than|a maximum of|max(?:imum)?(?: of)?) [\d,]+ (?!seconds|minutes|hours|days|decimal|digits)[a-z]+s\b|"
       r"\btoo many (?:items|rows|records|tokens|bytes|characters|chars|elements|results|values|files|pages|cells|"
       r"urls|ids|symbols|entries|lines)\b|\btoo many \w+ " + OWN_INPUT + r"\b",
       Code.PAYLOAD_TOO_LARGE, "the input is larger than allowed",
       "The input is too large. Send a smaller one, for example fewer items per call."),
    # A step to do first, said as the remedy ("Call open_document first."): after every size or lookup reading.
    _p(r"\b(?:call|run|open|load|select|start|connect|enable|restore|publish|show|save|commit|read|create|"
       r"initiali[sz]e|activate|unlock|install|stage|configure|upload|register|verify|confirm|approve)\b[^.;!\n]{0,60}"
       r"\bfirst\s*(?:[.!;)]|$)", _FP,
       "a step must be done first", "Do the required step first: {value}."),
    # A thing the call asks for is taken or gone for now (a slot, a room, a size): the state, not a failed service.
    _p(r"\b(?:slot|room|seat|table|date|day|time|timeslot|appointment|item|product|stock|size|colou?r|variant|spot|"
       r"vehicle|car|ticket|option|copy|bed|desk|court|fare|offer|doctor|agent|staff)s? (?:is |are |was |were )?"
       r"(?:currently |now )?unavailable\b|\bno (?:free|open|available) (?:\w+ )?(?:slots?|seats?|rooms?|tables?|"
       r"spots?|places?|beds?|times?|appointments?)\b|\b(?:has|have) (?:0|no|zero) (?:\w+ ){0,2}remaining\b|"
       r"\bwindow (?:is |has )?(?:closed|passed|expired)\b|\bhas no (?:\w+ ){0,2}on file\b", _FP,
       "what the call asks for is not free now",
       "{value} is not available now. Choose another or ask the user."),
    _p(r"\b(?:cannot|can't|may not|must not) (?:\w+ ){0,3}in the past\b|\bis in the past\b", _V,
       "a date or time argument lies in the past", "{value} is in the past. Pass a later date or time."),
    _p(r"^\s*no (?:such )?[a-z]+ <value>\s*[.!]?\s*$", Code.NOT_FOUND, "the thing the call names does not exist",
       "There is no {value}. Check the identifier or ask the user for the right one."),
    _p(r"(?:" + SERVICE + r" )?\bunavailable\b", Code.UPSTREAM_UNAVAILABLE, "a service is unavailable",
       "A service this tool depends on is unavailable. Make the identical call again shortly."),
    # A malformed argument (the broadest: last).
    _p(r"^\s*invalid\b|\binvalid\b|\bnot valid\b|must be|required|(?<!response )missing(?! (?:\w+ )?(?:in|"
       r"from) (?:the )?(?:\w+ )?"
       r"(?:response|reply))|malformed|bad request|\bexpected\b(?! (?:a |an )?(?:response|reply|result|answer) from)|"
       r"unprocessable|\bincorrect\b|validation failed|failed validation|\b(?:ValueError|TypeError|"
       r"ValidationError)\b|syntax error|"
       r"cannot start with|validation error|not a valid|out of range|outside (?:the )?(?:valid |allowed |permitted )?"
       r"range\b|unrecognized|^\s*unknown\b", _V,
       "an argument is missing or malformed", "The argument {value} is not valid. Correct it, for example as "
       "the tool's input schema describes it."),
)
