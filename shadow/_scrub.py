"""Credential-shaped text found and replaced: provider tokens, keys, URL passwords, ``name = value`` pairs, prose.

The shapes follow two maintained rule sets: detect-secrets' plugins (1.5) and gitleaks' default rules (the
provider-prefixed tokens, and the ``<provider word> ... = <value>`` pairs of its keyword rules). Redaction runs in
the writer for every string of every record, so each family sits behind a cheap test: a text shorter than
``SHORTEST`` without ``:`` or ``=`` holds nothing any shape finds; provider tokens, card numbers and ``name = value``
pairs are searched only in texts with a run of 14 or more token characters, tokens only where a word starts.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Final

REDACTED: Final = "[REDACTED]"
#: Shorter than this and without ``:`` or ``=``, a text holds nothing the shapes find (the shortest token shape,
#: ``sk_live_`` and 10 characters or a 15-digit card number, is longer).
SHORTEST: Final = 15

_KEY_BLOCK = re.compile(
    r"-----BEGIN[A-Z0-9 _-]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 _-]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
    r"|PuTTY-User-Key-File-\d:.*",
    re.DOTALL,
)
_URL_CREDENTIALS = re.compile(r"(?<=://)([^\s/:@]*:)[^\s/]*@")
_KEYWORD = (
    r"(?:password|passwd|passphrase|passcode|pwd|secret|token|api[ _-]?key|apikey|access[_-]?key|auth[_-]?key"
    r"|priv(?:ate)?[_-]?key|client[_-]?key|account[_-]?key|signing[_-]?key|db[_-]?pass|credentials?"
    r"|session[_-]?id|sessionid|sharedaccesskey|hmac"
    r"|k(?<![a-z0-9]k)ey(?![a-z0-9])|p(?<![a-z0-9]p)ass(?![a-z0-9])|p(?<![a-z0-9]p)w(?![a-z0-9])"
    r"|s(?<![a-z0-9]s)ig(?![a-z0-9]))"
)
#: Words of prose that says a credential's value: ``the password is X``, ``your one-time code was X``.
_PROSE_WORD = r"(?:password|passwd|passphrase|passcode|pin|secret|token|api key|otp|one-time code|access code)"
#: Searched in the lower-cased text: where a credential word starts (every alternative begins with a literal).
_WORD_SOURCE: Final = ("set-cookie|cookie|proxy-authorization|authorization|bearer|basic|pin|otp|one-time|curl|"
                       + _KEYWORD[3:-1])
#: Matched where ``_WORD`` found a word: a header, an auth scheme, ``<credential word> = value``, or prose.
_AT_WORD_SOURCE: Final = (
    r"(?P<header>(?:(?:set-)?cookie|(?:proxy-)?authorization)\s*:\s*)[^\r\n]+"
    r"|(?:bearer|basic)\s+[a-z0-9._~+/=-]{8,}"
    r"|(?P<curl>curl\b[^\r\n]*?\s(?:-u|--user)[\s=]+)(?P<cq>[\"'])?(?(cq)[^\"'\r\n]+|\S+)"
    r"|(?P<xml>key\s*=\s*\"[^\"]*(?:password|secret|token|apikey)[^\"]*\"\s+value\s*=\s*\")[^\"]*"
    r"|(?P<kv>" + _KEYWORD + r"\w*[\"'\]]{0,2}\s*(?::=|=>|[:=])\s*)(?P<q>[\"'`])?"
    r"(?(q)[^\"'`\r\n]+|[^\s\"',;&}]*[^\s\"',;&}:.])"  # unquoted: never the colon or full stop after it
    r"|(?P<prose>(?<![a-z])" + _PROSE_WORD + r"s?(?:\s+for\s+\S+)?(?:\s+(?:is|was|will\s+be|has\s+been|set\s+to"
    r"|changed\s+to|reset\s+to|now))+\s+)(?P<pq>[\"'`])?(?P<pv>(?(pq)[^\"'`\r\n]+|[^\s\"',;]+))"
)


class _Words:
    """``_WORD_SOURCE`` and ``_AT_WORD_SOURCE`` compiled (the latter twice: as is and any case), on first use: they
    took ``import shadow`` about 4 ms. Compiling imports nothing, so the writer's thread may do it at any time."""

    __slots__ = ("any_case", "at_word", "word")

    def __init__(self) -> None:
        self.word = re.compile(_WORD_SOURCE)
        self.at_word = re.compile(_AT_WORD_SOURCE)
        self.any_case = re.compile(_AT_WORD_SOURCE, re.IGNORECASE)


_words: list[_Words] = []  # the one ``_Words``, once made (two threads at once make the same patterns)


def warm() -> None:
    """Compile the credential-word patterns now (they compile on first use otherwise)."""
    _compiled_words()


def _compiled_words() -> _Words:
    if not _words:
        _words.append(_Words())
    return _words[0]


#: After ``the password is``: ordinary words that say something of the credential, not its value.
_PROSE_PLAIN: Final = frozenset({
    "a", "an", "the", "not", "no", "too", "required", "incorrect", "invalid", "wrong", "missing", "empty", "expired",
    "correct", "valid", "set", "unset", "blank", "null", "none", "being", "still", "now", "only", "at", "in", "of",
    "weak", "short", "long", "strong", "revoked", "unknown", "different", "same", "stored", "hidden", "redacted",
    "needed", "mandatory", "optional", "case-sensitive", "sent", "shown", "available", "unavailable", "locked",
    "changed", "reset", "used", "reused", "rotated", "disabled", "enabled", "[redacted]",
})
#: Provider tokens, card numbers (contiguous or split by dashes) and the values of ``name = value`` pairs are runs of
#: at least 14 token characters: only texts with such a run are searched for them.
_DIGIT: Final = re.compile(r"\d")
_LONG_RUN = re.compile(r"[A-Za-z0-9_\-.+/=:|%~]{14,}")
#: Provider tokens that start a word, by their first two characters (a table, not one alternation: ``re`` tries
#: every alternative at every position, while a token can only start where a word does).
_STARTING: Final = (
    # payments
    ("sk rk", r"(?:sk|rk)_(?:live|test|prod)_[0-9a-zA-Z]{10,99}"), ("wh", r"whsec_[A-Za-z0-9+/=]{20,}"),
    ("sh du", r"(?:shippo|duffel)_(?:live|test)_[A-Za-z0-9_=-]{20,}"), ("sq", r"sq0(?:csp|atp)-[0-9A-Za-z_-]{20,}"),
    ("EA", r"EAA[ACM][A-Za-z0-9_-]{22,}"), ("FL", r"FLW(?:SECK|PUBK)_TEST-[A-Za-z0-9]{12,32}(?:-X)?"),
    ("sh", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    # AI providers
    ("sk", r"sk-(?:ant-|proj-|svcacct-|admin-)?(?=[A-Za-z_-]*\d)[A-Za-z0-9_-]{12,}"), ("hf", r"hf_[A-Za-z0-9]{30,}"),
    ("ap", r"api_org_[A-Za-z]{30,}"), ("tv", r"tvly-(?:dev-|prod-)?(?=[A-Za-z-]*\d)[A-Za-z0-9]{20,}"),
    # code hosting, CI, registries
    ("gh", r"gh[pousr]_[A-Za-z0-9]{20,}"), ("gi", r"github_pat_\w{22,}"),
    ("gl", r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas|ffct)-[A-Za-z0-9_.-]{16,}"), ("GR", r"GR1348941[\w-]{20,}"),
    ("gl", r"gl(?:c|sa)_[A-Za-z0-9+/_]{32,}={0,3}"), ("sg", r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}"),
    ("AT", r"ATATT3[A-Za-z0-9_=-]{60,}"), ("CL", r"CLOJARS_[A-Za-z0-9]{40,}"), ("ru", r"rubygems_[a-f0-9]{48}"),
    ("np", r"npm_[A-Za-z0-9]{30,}"), ("py", r"pypi-AgE[A-Za-z0-9_-]{50,}"), ("pn", r"pnu_[A-Za-z0-9]{36}"),
    ("rd", r"rdme_[a-z0-9]{60,}"), ("AK", r"AKC[a-zA-Z0-9]{10,}"), ("AP", r"AP[\dA-F](?=[A-Za-z]*\d)[a-zA-Z0-9]{8,}\b"),
    ("pu", r"pul-[a-f0-9]{40}"),
    # chat and mail
    ("xo", r"xox[abposre]-[A-Za-z0-9-]{8,}|xoxe\.xox[bp]-[A-Za-z0-9-]{40,}"), ("xa", r"xapp-\d-[A-Za-z0-9-]{10,}"),
    ("SG", r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"), ("xk", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("AC SK", r"(?:AC|SK)[0-9a-fA-F]{32}\b"), ("pu ke", r"(?:pub)?key-[a-f0-9]{32}\b"),
    ("NR", r"NR(?:JS|II|AK)-[A-Za-z0-9-]{19,32}"),
    # clouds and infrastructure
    ("AI", r"AIza[0-9A-Za-z_-]{30,}"), ("A3 AB AC AK AS", r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("LT", r"LTAI[A-Za-z0-9]{20}"), ("do", r"do[opr]_v1_[a-f0-9]{64}"), ("da", r"dapi[a-f0-9]{32}(?:-\d)?"),
    ("v1", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{100,}"), ("hv", r"hv[sb]\.[\w-]{90,}"),
    ("s.", r"s\.(?=[A-Za-z]*\d)[A-Za-z0-9]{24}\b"), ("sh", r"sha256~[\w-]{43}"), ("fo", r"fo1_[\w-]{43}"),
    ("fm", r"fm[12][ar]?_[A-Za-z0-9+/]{60,}={0,3}"), ("AQ", r"AQVN[A-Za-z0-9_-]{35,38}"),
    ("t1", r"t1\.[\w-]+=*\.[\w-]{60,}={0,2}"), ("dp", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
    ("dt", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"), ("ps", r"pscale_(?:tkn|oauth|pw)_[\w=.-]{32,64}"),
    ("tk", r"tk-us-[\w-]{48}"), ("dn", r"dnkey-[a-z0-9=_-]{26}-[a-z0-9=_-]{52}"),
    ("op", r"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}"),
    ("AG", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"), ("sn", r"sntry[su]_[A-Za-z0-9+/=_]{40,}"),
    ("sm", r"sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}\b"), ("ic", r"ico-[A-Za-z0-9]{32}\b"),
    ("s-", r"s-s4t2(?:ud|af)-[a-fA-F0-9]{64}"),
    ("sc ex au", r"(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_-][A-Za-z0-9-]{10,32}\."
                 r"[A-Za-z0-9+/_=-]{30,120}"),
    ("4b", r"4b1d[A-Za-z0-9]{38}\b"), ("p8", r"p8e-[A-Za-z0-9]{32}"), ("PM", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),
    ("EZ", r"EZ[AT]K[A-Za-z0-9]{54}\b"), ("fi", r"fio-u-[A-Za-z0-9_=-]{64}"), ("tf", r"tfp_[A-Za-z0-9_.=-]{59}"),
    ("li", r"lin_api_[A-Za-z0-9]{40}"), ("AP", r"API-[A-Z0-9]{26}\b"),
    ("pa sa", r"(?:pat|sat)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    ("pk sk tk", r"(?:pk|sk|tk)\.[A-Za-z0-9]{60,}\.[A-Za-z0-9]{22}"), ("sl", r"sl\.[A-Za-z0-9_=-]{100,}"),
    ("ac", r"access-(?:sandbox|development|production)-[0-9a-f-]{36}"), ("AA", r"A{22}[A-Za-z0-9%]{60,}"),
    # signed tokens (JWT, base64 of a JWT, Grafana's)
    ("ey", r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*|eyJrIjoi[A-Za-z0-9]{40,}={0,3}"),
    ("ZX", r"ZXlK[A-Za-z0-9/\\_+-]{40,}={0,2}"),
    # Discord bot tokens: M, N or O and any token character
    (" ".join(f"{a}{b}" for a in "MNO" for b in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"),
     r"[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27}\b"),
)


class _ByStart(dict[str, "re.Pattern[str] | None"]):
    """The tokens that may start with a word's first two characters, as one pattern compiled when first asked
    (``None``: no token starts so): compiling all of them took ``import shadow`` about 10 ms. Compiling imports
    nothing, so the writer's thread may do it while the application forks."""

    def __init__(self) -> None:
        super().__init__()
        sources: dict[str, list[str]] = {}
        for keys, rx in _STARTING:
            for key in keys.split():
                sources.setdefault(key, []).append(f"(?:{rx})")
        self._sources: Final = {start: "|".join(rxs) for start, rxs in sources.items()}

    def __missing__(self, start: str) -> re.Pattern[str] | None:
        source = self._sources.get(start)
        found = self[start] = None if source is None else re.compile(source)
        return found


_BY_START: Final = _ByStart()
_WORD_START = re.compile(r"[A-Za-z0-9_]+")
#: Tokens found by what they hold, each behind a substring it needs (``in`` is a fast scan).
_INSIDE: Final = (
    ("_gitlab_session=", re.compile(r"_gitlab_session=[0-9a-z]{20,}")),
    ("hooks.slack.com", re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_+/]+")),
    ("webhook.office.com", re.compile(r"\.webhook\.office\.com/webhookb2/\S+")),
    ("/api/webhooks/", re.compile(r"/api/webhooks/\d{5,25}/[A-Za-z0-9_-]{20,}")),  # Discord's, and alike
    ("api.softlayer.com", re.compile(r"api\.softlayer\.com/soap/v3(?:\.1)?/[a-z0-9]{64}")),
    ("Q~", re.compile(r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}")),
    (":", re.compile(r"\b\d{5,16}:A[A-Za-z0-9_-]{34}\b|\b\d{8,10}:[0-9A-Za-z_-]{35}\b")),
    ("-us", re.compile(r"\b[0-9a-f]{32}-us[0-9]{1,2}\b")),
    (".atlasv1.", re.compile(r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}")),
    ("_mmk", re.compile(r"\b[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk\b")),
    ("|", re.compile(r"\b\d{15,16}\|[0-9A-Za-z_-]{27,40}")),
    ("%7C", re.compile(r"\b\d{15,16}%7C[0-9A-Za-z_-]{27,40}")),
)
#: A card number: 13 to 19 digits, contiguous or in groups split by one dash; Luhn-checked.
_CARD = re.compile(r"(?<![\d.-])\d(?:-?\d){12,18}(?![\d-])")
_CARD_PREFIX = re.compile(r"4|5[1-5]|2[2-7]|3[47]|6(?:011|5)|35|3[068]")
#: An assignment in free text (``twitter_secret = ...``, ``"adafruit": "..."``): the operator first, then the value.
_ASSIGN = re.compile(r"(?:::?=?|=>?|\?=)[`'\"\s=]{0,5}(?P<value>[\w.+/~%|=-]{14,})")
_TOKEN_LIKE = re.compile(r"(?=[^\d]*\d)[\w.+/~%|=:-]{14,}")
_NAME_BEFORE = re.compile(r"([A-Za-z][\w.-]{0,80})[\s'\"\]]{0,3}\Z")
_NAME_SPLIT = re.compile(r"[^a-zA-Z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
#: Provider words of gitleaks' keyword rules (with detect-secrets' IBM, Cloudant and SoftLayer, and gitleaks' generic
#: ``auth``/``creds``): a name with one of them, before a token-like value, names a credential.
VENDOR_WORDS: Final = frozenset({
    "adafruit", "adobe", "airtable", "algolia", "alibaba", "asana", "atlassian", "confluence", "jira", "beamer",
    "bitbucket", "bittrex", "meraki", "cloudflare", "codecov", "cohere", "coinbase", "confluent", "contentful",
    "datadog", "dnkey", "discord", "droneci", "dropbox", "etsy", "facebook", "fastly", "finicity", "finnhub",
    "flickr", "freshbooks", "gitter", "gocardless", "heroku", "hubspot", "intercom", "jfrog", "artifactory",
    "bintray", "xray", "kraken", "kucoin", "launchdarkly", "linear", "linkedin", "lob", "mailchimp", "mailgun",
    "mapbox", "mattermost", "messagebird", "netlify", "newrelic", "nytimes", "okta", "plaid", "privateai",
    "rapidapi", "sendbird", "sentry", "snyk", "sonar", "squarespace", "sumo", "telegram", "travis", "twitch",
    "twitter", "typeform", "yandex", "zendesk", "sourcegraph", "contribsys", "cloudant", "ibm", "softlayer",
    "auth", "creds", "password", "passwd", "secret", "token", "credential", "credentials", "apikey",
})


@functools.lru_cache(maxsize=4096)
def vendor_name(name: str) -> bool:
    """Whether ``name`` (a key, or the name before ``=`` in text) names a provider's credential or id."""
    words = [w.lower() for w in _NAME_SPLIT.split(name) if w]
    if any(w in VENDOR_WORDS for w in words):
        return True
    joined = "".join(words)
    return any(w in joined for w in ("linkedin", "messagebird", "newrelic", "privateai", "newyorktimes"))


_UUID: Final = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_FILE_PATH: Final = re.compile(r"[\w.-]+(?:/[\w.-]+)+\.[A-Za-z][A-Za-z0-9]{0,7}")


def looks_random(value: str) -> bool:
    """Whether a token-like ``value`` looks generated rather than written: not a UUID or a file path, and its
    characters spread at least 0.85 of the most its length allows (Shannon entropy, as detect-secrets' high-entropy
    plugins measure it): ``Zk3Qw9Lm2Np8Rt5V`` is, ``ORD-2024-000123`` and ``2024-05-02T10:00:00Z`` are not."""
    if _UUID.fullmatch(value) or _FILE_PATH.fullmatch(value):
        return False
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    size = len(value)
    entropy = -sum(n / size * math.log2(n / size) for n in counts.values())
    return entropy >= 0.85 * math.log2(size)


def token_like(value: str) -> bool:
    """Whether ``value`` could be a generated credential: fourteen or more characters (the shortest value of a
    gitleaks keyword rule) of one run of token characters, a digit among them (``PROJ-12345``, a word or a sentence
    is no credential)."""
    return _TOKEN_LIKE.fullmatch(value) is not None


def scrub(text: str) -> str:
    """``text`` with every credential-shaped part replaced by ``REDACTED``."""
    if len(text) < SHORTEST and ":" not in text and "=" not in text:
        return text
    if "PRIVATE KEY" in text or "PuTTY-User" in text:
        text = _KEY_BLOCK.sub(REDACTED, text)
    if "://" in text and "@" in text:
        text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    text = _scrub_words(text)
    if _LONG_RUN.search(text) is not None:  # every token, card number and assigned value is such a run
        text = _scrub_tokens(text)
        if _DIGIT.search(text) is not None:
            text = _CARD.sub(_card, text)
        if "=" in text or ":" in text:
            text = _scrub_assignments(text)
    return text


def _scrub_tokens(text: str) -> str:
    pieces: list[str] = []
    done = 0
    by_start = _BY_START
    for word in _WORD_START.finditer(text):
        start = word.start()
        found_rx = by_start[text[start:start + 2]] if start >= done else None
        found = found_rx.match(text, start) if found_rx is not None else None
        if found is not None:
            pieces += (text[done:start], REDACTED)
            done = found.end()
    if pieces:
        text = "".join(pieces) + text[done:]
    for need, inside in _INSIDE:
        if need in text:
            text = inside.sub(REDACTED, text)
    return text


def _card(found: re.Match[str]) -> str:
    digits = [int(c) for c in found.group(0) if c.isdigit()]
    if _CARD_PREFIX.match(found.group(0)) is None or not 13 <= len(digits) <= 19:
        return found.group(0)
    total = sum(d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(reversed(digits)))
    return REDACTED if total % 10 == 0 else found.group(0)


def _scrub_assignments(text: str) -> str:
    pieces: list[str] = []
    done = 0
    for found in _ASSIGN.finditer(text):
        value = found.group("value")
        if not token_like(value) or REDACTED in value:
            continue
        name = _NAME_BEFORE.search(text, max(0, found.start() - 84), found.start())
        if name is None or not vendor_name(name.group(1)):
            continue
        pieces += (text[done:found.start("value")], REDACTED)
        done = found.end("value")
    return "".join(pieces) + text[done:] if pieces else text


def _scrub_words(text: str) -> str:
    low = text.lower()
    if len(low) != len(text):  # lower-casing changed the length (rare scripts): match case-insensitively instead
        return _compiled_words().any_case.sub(lambda m: _replacement(m, text), text)
    words = _words[0] if _words else _compiled_words()
    hit = words.word.search(low)
    if hit is None:
        return text
    pieces: list[str] = []
    done = 0
    while hit is not None:
        found = words.at_word.match(low, hit.start())
        if found is None:
            hit = words.word.search(low, hit.start() + 1)
            continue
        pieces += (text[done:found.start()], _replacement(found, text))
        done = found.end()
        hit = words.word.search(low, done)
    return "".join(pieces) + text[done:]


def _replacement(found: re.Match[str], text: str) -> str:
    """What replaces one ``_AT_WORD`` match: the word and separator as written, then the redaction marker."""
    if found.group("prose") is not None:
        if found.group("pq") is None and found.group("pv").lower().rstrip(".!?") in _PROSE_PLAIN:
            return text[found.start():found.end()]
        start, end = found.span("prose")
        return text[start:end] + (found.group("pq") or "") + REDACTED
    for group, quote in (("kv", "q"), ("header", ""), ("curl", "cq"), ("xml", "")):
        if found.group(group) is not None:
            start, end = found.span(group)
            return text[start:end] + ((found.group(quote) or "") if quote else "") + REDACTED
    return REDACTED
