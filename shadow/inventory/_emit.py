"""Writing the inventory as a Python module that defines a ``shadow.Rules`` draft, one commented rule per site."""

from __future__ import annotations

import re
from collections.abc import Sequence

from shadow.inventory._model import Inventory, RuleDraft, Site

_HELPERS = '''

def _named(exc: BaseException, *names: str) -> bool:
    """Whether the exception's class, or one of its base classes, has one of these names."""
    return any(cls.__name__ in names for cls in type(exc).__mro__)


def _status(exc: BaseException) -> object:
    """The HTTP status a framework exception carries (FastAPI/Starlette ``status_code``, Werkzeug ``code``)."""
    return getattr(exc, "status_code", None) or getattr(exc, "code", None)
'''


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _comment(site: Site) -> str:
    via = f" via {' -> '.join(site.via)}" if site.via else ""
    target = site.code or "UNPLACED"
    return _one_line(f"# {site.file}:{site.line} {site.tool} ({site.kind}{via}): {site.what()} -> {target}: "
                     f"{site.reason}")


class _Imports:
    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # dotted -> local name
        self.taken: set[str] = {"shadow", "RULES", "_named", "_status"}

    def local(self, dotted: str) -> str:
        if dotted not in self.names:
            module, _, name = dotted.rpartition(".")
            local = name if name not in self.taken else "_".join([*module.split("."), name])
            self.taken.add(local)
            self.names[dotted] = local
        return self.names[dotted]

    def lines(self) -> list[str]:
        modules: dict[str, list[str]] = {}
        for dotted, local in sorted(self.names.items()):
            module, _, name = dotted.rpartition(".")
            modules.setdefault(module, []).append(name + (f" as {local}" if local != name else ""))
        return [f"from {module} import {', '.join(names)}" for module, names in modules.items()]


def _text(value: str) -> str:
    """A readable Python literal: a raw string for a regex with backslashes, a plain one otherwise."""
    if '"' in value or "\n" in value or value.endswith("\\") or not value.isprintable():
        return repr(value)
    return f'r"{value}"' if "\\" in value else f'"{value}"'


#: What ends an author's message before the value built at run time ("must look like BK-1234, got …").
_DANGLING = re.compile(r"(?:[\s,:;=(\-]+|\b(?:but )?(?:got|received|given|was|were|is|are|for|of|with|in|at|from|to|on|"
                       r"by|and|or|not)\b)+$", re.IGNORECASE)


def author_message(sites: Sequence[Site]) -> str | None:
    """The author's fixed words of the sites a draft exception rule matches, as the rule's message: the model never
    read the exception's text, so without one it gets the code's generic words (``None`` when the sites say
    different things or too little)."""
    texts = {site.message for site in sites}
    if len(texts) != 1:
        return None
    (text,) = texts
    if not text:
        return None
    text = re.sub(r"\s*[(\[][^()\[\]]*…[^()\[\]]*[)\]]", "", text)  # "(got …)": an aside about the value
    fixed = " ".join(re.sub(r"""["'`]?…["'`]?""", " ", text).split())
    fixed = _DANGLING.sub("", fixed).strip()
    if len(fixed) < 12 or sum(c.isalpha() for c in fixed) < 8 or len(fixed) > 300:
        return None
    fixed = fixed[0].upper() + fixed[1:]
    return (fixed if fixed.endswith((".", "!", "?")) else fixed + ".").replace("{", "{{").replace("}", "}}")


def _call(rule: RuleDraft, imports: _Imports, message: str | None = None) -> str:
    code, name = _text(rule.code), _text(rule.name)
    if rule.kind == "result":
        assert rule.pattern is not None
        return f"RULES = RULES.on_result({_text(rule.pattern)}, {code}, name={name})"
    if rule.builtin is not None:
        match = rule.builtin
    elif rule.class_ref is not None:
        match = imports.local(rule.class_ref)
    else:
        match = f"lambda e: _named(e, {_text(rule.class_name or '')})"
        if rule.status is not None:
            match += f" and _status(e) == {rule.status}"
    pattern = f", pattern={_text(rule.pattern)}" if rule.pattern is not None else ""
    words = f", message={_text(message)}" if message is not None else ""
    return f"RULES = RULES.on({match}, {code}{words}{pattern}, name={name})"


def _narrow(rule: RuleDraft) -> bool:
    return rule.pattern is not None or rule.status is not None


def emit_rules(inventory: Inventory, sources: Sequence[str] = ()) -> str:
    """The text of a module defining ``RULES``: the built-in rules plus one draft rule per placed site."""
    drafts: dict[RuleDraft, list[Site]] = {}
    covered: list[Site] = []
    unplaced: list[Site] = []
    for site in inventory.sites:
        if site.rule is not None:
            drafts.setdefault(site.rule, []).append(site)
        elif site.code is not None:
            covered.append(site)
        else:
            unplaced.append(site)
    # Rules.on()/on_result() put a rule first, so broad rules are written before narrow ones (which then win).
    order = sorted(drafts, key=lambda r: (r.kind == "result", _narrow(r), drafts[r][0].file, drafts[r][0].line))
    imports = _Imports()
    body: list[str] = []
    for rule in order:
        body += [_comment(site) for site in drafts[rule]]
        message = author_message(drafts[rule]) if rule.kind == "exception" else None
        body += [_call(rule, imports, message), ""]
    if covered:
        body.append("# Already mapped (no rule needed):")
        body += [_comment(site) for site in covered]
        body.append("")
    if unplaced:
        body.append("# UNPLACED: no code could be proposed; map these by hand, or raise shadow.Fail in the tool:")
        body += [_comment(site) for site in unplaced]
        body.append("")
    uses_helpers = any(r.class_name is not None for r in drafts)
    where = _one_line(", ".join(sources)).replace("\\", "/").replace('"', "'") or "the scanned sources"
    head = [
        f'"""Draft shadow rules for the tools in {where}, written by `shadow inventory` (review each rule)."""',
        "",
        f"# {_one_line(inventory.summary())}.",
        "# Use: @shadow.tool(rules=RULES) on each tool (this module imports as is).",
        "# Rules.on() and Rules.on_result() put a rule first: a later line wins over an earlier one.",
        "# Give each rule a message with the remedy, for example",
        "#   RULES.on(NotFound, \"not_found\",",
        "#            \"No user has the id {id}. Find it first, for example with list_users().\",",
        "#            context=lambda e: {\"id\": e.args[0]})",
        "",
        "from __future__ import annotations",
        "",
        "import shadow",
    ]
    lines = imports.lines()
    if lines:
        head += ["", *lines]
    text = "\n".join(head)
    if uses_helpers:
        text += "\n" + _HELPERS
    text += "\n\nRULES = shadow.Rules.default()\n\n" + "\n".join(body)
    return text.rstrip("\n") + "\n"
