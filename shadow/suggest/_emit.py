"""Writing suggestions as an importable Python module that defines ``RULES``, one commented rule per group."""

from __future__ import annotations

import re

from shadow.suggest._groups import Group, Suggestions

_HELPERS = '''

def _named(exc: BaseException, *names: str) -> bool:
    """Whether the exception's class, or one of its base classes, has one of these names."""
    return any(cls.__name__ in names for cls in type(exc).__mro__)


def _fields(pattern: str) -> Callable[[Any], dict[str, str]]:
    """Context read from the message: each named group of ``pattern`` that matched."""
    regex = re.compile(pattern, re.IGNORECASE)

    def read(source: Any) -> dict[str, str]:
        text = str(source) if isinstance(source, BaseException) else error_text(source) or ""
        found = regex.search(text)
        return {k: v[:200] for k, v in found.groupdict().items() if v is not None} if found else {}

    return read
'''


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _literal(value: str) -> str:
    """A readable Python literal: a raw string for a regex with backslashes, else a plain one."""
    if '"' in value or "\n" in value or value.endswith("\\") or not value.isprintable():
        return repr(value)
    return f'r"{value}"' if "\\" in value else f'"{value}"'


def _comment(group: Group) -> list[str]:
    raised = f", raised as {group.exception}" if group.exception else ""
    example = _one_line(group.example)[:160]
    return [
        f"# {group.tool}: {group.count} unmapped ({group.share:.1%}){raised}; e.g. {example}",
        f"#   shape: {_one_line(group.shape.text)[:160]}",
        f"#   {_verdict(group)}: {_one_line(group.reason)[:160]}",
    ]


def _verdict(group: Group) -> str:
    if group.code is None:
        return "UNPLACED (closest: " + ", ".join(c.value for c in group.candidates) + ")"
    return f"{group.code.value} (confidence {group.confidence:.2f})"


def _call(group: Group, index: int) -> list[str]:
    assert group.code is not None
    assert group.message is not None
    variable = f"_SHAPE_{index}"
    name = _literal(f"suggest:{group.tool}:{index}")
    context = f"context=_fields({variable}), " if group.shape.fields else ""
    if group.exception is None:
        head, tail = f"    {variable}, ", ""
        call = "RULES = RULES.on_result("
    else:
        head = f"    lambda e: _named(e, {_literal(group.exception.rsplit('.', 1)[-1])}), "
        tail = f"pattern={variable}, "
        call = "RULES = RULES.on("
    # A returned error is served in the tool's own words (the model read them in legacy); the draft remedy is a
    # comment to adopt when it says more. A raised exception's text never reaches the model: the draft is served.
    message = (["    None,  # the tool's own words; a draft remedy: " + _one_line(group.message)[:120]]
               if group.exception is None else [f"    {_literal(group.message)},"])
    action = f"next_action={_literal(group.action.value)}, " if group.action is not None else ""
    return [f"{variable} = {_literal(group.shape.pattern)}", call,
            f"{head}{_literal(group.code.value)},",
            *message,
            f"    {tail}{context}{action}name={name})"]


_PLACEHOLDERS = re.compile(r"<[a-z_][a-z0-9_]*>")


def _specificity(group: Group) -> int:
    """How much of a shape is its own words: its length without placeholders and spaces."""
    return len(_PLACEHOLDERS.sub("", group.shape.text).replace(" ", ""))


def emit_rules(found: Suggestions, source: str, base: str | None = None) -> str:
    """The text of a module defining ``RULES``: the built-in rules (or the rules module ``base``, as ``--rules``
    names it: a dotted name, a ``.py`` file, ``MODULE:NAME``) plus one draft rule per group with a code."""
    body: list[str] = []
    unplaced: list[str] = []
    # Rules.on()/on_result() put a rule first, so a later line wins on overlap: the most specific shapes (the most
    # words of their own, placeholders aside) are written last, so that "hotel <hotel> has no room <room>" wins
    # over a bare "'<value>'"; among equally specific ones, the largest group wins.
    numbered = {id(group): number for number, group in enumerate(found.groups, 1)}
    for group in sorted(found.groups, key=lambda g: (_specificity(g), g.count, -numbered[id(g)])):
        if group.code is None:
            unplaced += _comment(group)
            continue
        body += [*_comment(group), *_call(group, numbered[id(group)]), ""]
    if unplaced:
        body += ["# UNPLACED: no code could be proposed; map these by hand:", *unplaced, ""]
    where = _one_line(source).replace("\\", "/").replace('"', "'")
    head = [
        f'"""Draft shadow rules learned from the unmapped errors in {where}, written by `shadow rules suggest` '
        '(review each rule)."""',
        "",
        f"# {_one_line(found.summary())}.",
        "# Use: @shadow.tool(rules=RULES), or shadow proxy --rules THIS_MODULE, or shadow import --rules.",
        "# Rules.on() and Rules.on_result() put a rule first: a later line wins over an earlier one.",
        "# Each message is a draft: make it name the remedy for your tool; {field} comes from context.",
        "",
        "from __future__ import annotations",
        "",
        "import re",
        "from collections.abc import Callable",
        "from typing import Any",
        "",
        "import shadow",
        "from shadow.contract import error_text",
    ]
    if base is not None:
        module, name = _base_import(base)
        head += [f"from {module} import {name} as _BASE  # the rules the log was judged with (--rules {base})"]
    text = "\n".join(head) + "\n" + _HELPERS
    start = "_BASE" if base is not None else "shadow.Rules.default()"
    text += f"\n\nRULES = {start}\n\n" + "\n".join(body)
    return text.rstrip("\n") + "\n"


def _base_import(ref: str) -> tuple[str, str]:
    """``(module, name)`` to import the rules ``--rules`` named: ``tool_rules.py`` is ``tool_rules``, found beside
    the emitted module or on ``PYTHONPATH``; ``pkg.rules:NAME`` is ``pkg.rules`` and ``NAME``."""
    module, _, name = ref.rpartition(":") if re.search(r":[A-Za-z_]\w*$", ref) else (ref, "", "")
    if module.endswith(".py"):
        module = module.replace("\\", "/").rsplit("/", 1)[-1][:-3]
    return module, name or "RULES"
