"""Proposing a code for each error site, with the reason, from the same knowledge the built-in rules use."""

from __future__ import annotations

import re
from typing import Final

from shadow.contract import _builtin
from shadow.contract._codes import Code
from shadow.contract._reading import reading
from shadow.contract._rules import Rules, error_text, looks_like_error, status_of
from shadow.inventory._index import ClassInfo
from shadow.inventory._model import RuleDraft, Site
from shadow.inventory._scan import RUNTIME, Raw

_DEFAULTS: Final = Rules.default()
_METACHARS = re.compile(r"([.^$*+?{}\[\]\\|()])")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|_+")
#: What a builtin exception raised on purpose by a tool usually means (used after every better clue).
_BUILTIN_MEANING: Final[tuple[tuple[type[BaseException], Code, str], ...]] = (
    (KeyError, Code.NOT_FOUND, "a KeyError raised by a tool usually means the named item does not exist"),
    (LookupError, Code.NOT_FOUND, "a LookupError raised by a tool usually means the named item does not exist"),
    (ValueError, Code.VALIDATION_ERROR, "a ValueError raised by a tool usually rejects an argument"),
    (TypeError, Code.VALIDATION_ERROR, "a TypeError raised by a tool usually rejects an argument's type"),
)


def status_code(status: int) -> Code | None:
    """The code an HTTP status maps to, by the table the built-in result rules use."""
    for statuses, code in _builtin.STATUS_TO_CODE:
        if status in statuses:
            return code
    return None


def text_code(text: str) -> tuple[Code, str] | None:
    """The code an error text reads as, and the words that matched, by the phrase table (as the built-in rules
    read it: varying values masked, a wrapper's opening read past)."""
    found = reading(text)
    if found is None:
        return None
    phrase, said = found
    return phrase.code, said or phrase.reason


def text_pattern(text: str | None) -> str | None:
    """A regex for the fixed parts of a message built partly at run time (``None``: no fixed part)."""
    if text is None:
        return None
    parts = [_METACHARS.sub(r"\\\1", part.strip()) for part in text.split(RUNTIME) if len(part.strip()) >= 3]
    return ".*".join(parts) or None


def _label(cls_name: str, text: str | None) -> str:
    fixed = max((part.strip() for part in (text or "").split(RUNTIME)), key=len, default="")
    return f"{cls_name}: {fixed}"[:80] if fixed else cls_name


def _words(name: str) -> str:
    return _CAMEL.sub(" ", name).strip()


def _default_exception_rule(cls: ClassInfo) -> tuple[Code, str] | None:
    if cls.base is None:
        return None
    for rule in _DEFAULTS.exception_rules:
        if isinstance(rule.match, type | tuple) and rule.pattern is None and issubclass(cls.base, rule.match):
            return rule.code, rule.name
    return None


def _default_result_rule(value: object) -> tuple[Code | None, str] | None:
    for rule in _DEFAULTS.result_rules:
        try:
            if rule.match(value):
                return rule.code, rule.name
        except Exception:  # a value the matcher cannot read: no rule
            continue
    return None


def _class_match(cls: ClassInfo, code: Code, pattern: str | None = None, text: str | None = None) -> RuleDraft:
    name = _label(cls.name, text) if pattern else cls.name
    if cls.pyclass is not None and cls.qualname.startswith("builtins."):
        return RuleDraft("exception", code.value, builtin=cls.name, pattern=pattern, name=name)
    if cls.pyclass is not None or cls.importable:
        return RuleDraft("exception", code.value, class_ref=cls.importable or cls.qualname, pattern=pattern, name=name)
    return RuleDraft("exception", code.value, class_name=cls.name, pattern=pattern, name=name)


def _by_class(cls: ClassInfo) -> tuple[Code, str, str | None] | None:
    """A code from the class alone: a built-in rule (third item: its name), a class status, or the class name."""
    default = _default_exception_rule(cls)
    if default is not None:
        return default[0], f"the built-in rule {default[1]} maps it", default[1]
    if cls.status is not None:
        code = status_code(cls.status)
        if code is not None:
            return code, f"the class sets HTTP status {cls.status}", None
    for qualname in cls.lineage or (cls.qualname,):
        name = qualname.rsplit(".", 1)[-1].lstrip("?")
        found = text_code(_words(name))
        if found is not None:
            return found[0], f'the class name "{name}" reads as "{found[1]}"', None
    return None


def _builtin_meaning(cls: ClassInfo) -> tuple[Code, str] | None:
    for base, code, why in _BUILTIN_MEANING:
        if cls.base is not None and issubclass(cls.base, base):
            return code, why
    return None


def place(raw: Raw, tool: str) -> Site:
    """The site with its proposed code (or ``None``), the reason, and the draft rule that gives that code."""
    if raw.kind in ("error-return", "except-return"):
        return _place_result(raw, tool)
    return _place_exception(raw, tool)


def _site(raw: Raw, tool: str, code: Code | None, reason: str, *, rule: RuleDraft | None = None,
          covered_by: str | None = None, message: str | None = None) -> Site:
    exception = raw.cls.qualname.lstrip("?") if raw.cls is not None else None
    status = raw.status if raw.cls is not None or raw.kind == "abort" else status_of(raw.value)
    return Site(raw.file, raw.line, tool, raw.kind, exception, status, message or raw.message,
                code.value if code is not None else None, reason, raw.via, covered_by, rule)


def _place_exception(raw: Raw, tool: str) -> Site:
    cls = raw.cls
    if raw.is_fail:
        try:
            fixed = Code(raw.fail_code or "")
        except ValueError:
            return _site(raw, tool, None, "raises shadow.Fail with a code the source does not fix; "
                                          "it is structured at run time, check the code is one of the 16")
        return _site(raw, tool, fixed, f"raises shadow.Fail({fixed.value!r}): already structured", covered_by="Fail")
    if raw.kind == "abort" or (raw.status is not None and cls is None):
        assert raw.status is not None
        code = status_code(raw.status)
        if code is None:
            return _site(raw, tool, None, f"HTTP status {raw.status} has no standard code; map it by hand")
        name = cls.name if cls is not None else "HTTPException"
        rule = RuleDraft("exception", code.value, class_name=name, status=raw.status, name=f"{name} {raw.status}")
        return _site(raw, tool, code, f"HTTP status {raw.status}", rule=rule)
    if cls is None:
        return _site(raw, tool, None, "raises a value whose class the source does not say; raise a named "
                                      "exception class or shadow.Fail")
    by_class = _by_class(cls)
    if by_class is not None:
        code, why, builtin_rule = by_class
        if builtin_rule is not None:
            return _site(raw, tool, code, why, covered_by=builtin_rule)
        return _site(raw, tool, code, why, rule=_class_match(cls, code))
    pattern = text_pattern(raw.message)
    if raw.message is not None:
        found = text_code(raw.message.replace(RUNTIME, " "))
        if found is not None:
            return _site(raw, tool, found[0], f'the message reads as "{found[1]}"',
                         rule=_class_match(cls, found[0], pattern, raw.message))
    meaning = _builtin_meaning(cls)
    if meaning is not None:
        return _site(raw, tool, meaning[0], meaning[1], rule=_class_match(cls, meaning[0], pattern, raw.message))
    if raw.kind == "except-reraise":
        why = f"re-raises a caught {cls.name}, and nothing in its class says what it means"
    else:
        why = f"no built-in rule, status, class name or message pattern says what {cls.name} means"
    return _site(raw, tool, None, why + "; map it by hand")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _place_result(raw: Raw, tool: str) -> Site:
    value = raw.value
    caught = [c for c in raw.caught if not c.broad]
    if not looks_like_error(value):
        what = f"a caught {', '.join(c.name for c in caught)}" if caught else "any exception"
        return _site(raw, tool, None, f"the except block for {what} returns {_short(value)}, which reads as "
                                      "success, so the model never learns the call failed; return an error "
                                      "value or raise shadow.Fail", message=_short(value))
    text = error_text(value)
    default = _default_result_rule(value)
    if default is not None and default[0] is not None:
        return _site(raw, tool, default[0], f"the built-in rule {default[1]} maps it", covered_by=default[1],
                     message=text)
    pattern = text_pattern(text)
    for cls in caught:
        by_class = _by_class(cls)
        meaning = _builtin_meaning(cls) if by_class is None else by_class[:2]
        if meaning is None:
            continue
        code, why = meaning
        if pattern is None:
            return _site(raw, tool, None, f"returns the text of a caught {cls.name} built at run time, so no rule "
                                          f"can tell it apart ({why}: {code.value}); return a fixed text or raise "
                                          "shadow.Fail", message=text)
        rule = RuleDraft("result", code.value, pattern=pattern, name=_label("text", text))
        return _site(raw, tool, code, f"returned for a caught {cls.name}: {why}", rule=rule, message=text)
    if text is not None and text.replace(RUNTIME, "").strip():
        why = f"the error text {text!r} matches no rule"
    else:
        why = "an error value whose text and status are only known at run time"
    return _site(raw, tool, None, why + "; map it by hand", message=text)
