"""MkDocs hooks: tables generated from the one source in the package (codes, settings), never copied by hand."""

from __future__ import annotations

import ast
import dataclasses
import io
import re
import tokenize
from pathlib import Path
from typing import Any

MARKER = re.compile(r"<!-- generated: ([\w-]+) -->")


def codes_table() -> str:
    """The code table, from ``shadow/contract/_codes.py`` (what the README's copy is checked against)."""
    from shadow.contract._describe import markdown_table

    return markdown_table()


def default_messages() -> str:
    """Each code's default message: what a payload says when no rule supplies one."""
    from shadow.contract._codes import CODE_TABLE

    rows = ["| code | default message |", "|---|---|"]
    rows += [f"| `{spec.code.value}` | {spec.default_message} |" for spec in CODE_TABLE.values()]
    return "\n".join(rows) + "\n"


def next_actions() -> str:
    """The three next actions and what each tells the model."""
    from shadow.contract._codes import NEXT_ACTION_MEANINGS

    rows = ["| next_action | tells the model |", "|---|---|"]
    rows += [f"| `{action.value}` | {meaning} |" for action, meaning in NEXT_ACTION_MEANINGS.items()]
    return "\n".join(rows) + "\n"


def _field_comments(source: str) -> dict[str, str]:
    """``Settings`` field -> its comment in the source (a trailing ``# ...`` or the ``#:`` lines above)."""
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Settings")
    lines = source.splitlines()
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string
    out: dict[str, str] = {}
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        line = node.lineno
        text = comments.get(line, "")
        if text and not lines[line - 1].lstrip().startswith("#"):
            out[node.target.id] = text.lstrip("# ").strip()
            continue
        above = []
        n = line - 1
        while n in comments and lines[n - 1].lstrip().startswith("#:"):
            above.insert(0, comments[n][2:].strip())
            n -= 1
        out[node.target.id] = " ".join(above)
    return out


def settings_table() -> str:
    """Every ``Settings`` field: its default, its ``SHADOW_*`` variable and its comment in ``shadow/_config.py``."""
    from shadow import _config

    comments = _field_comments(Path(_config.__file__).read_text(encoding="utf-8"))
    rows = ["| `configure(...)` keyword | default | variable | what it sets |", "|---|---|---|---|"]
    for field in dataclasses.fields(_config.Settings):
        default = field.default if field.default is not dataclasses.MISSING else None
        variable = _config._ENV.get(field.name)
        rows.append(f"| `{field.name}` | `{default!r}` | {f'`{variable}`' if variable else ''} | "
                    f"{comments.get(field.name, '').replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def cli_reference() -> str:
    """Every command and option, from the Typer app itself (typer's own Markdown generator), headings one level down."""
    import typer
    from typer.cli import get_docs_for_click

    from shadow.cli import app

    command = typer.main.get_command(app)
    docs = get_docs_for_click(obj=command, ctx=typer.Context(command), name="shadow")
    out, fenced = [], False
    for line in docs.strip().splitlines():
        fenced ^= line.startswith("```")
        out.append("#" + line if line.startswith("#") and not fenced else line)
    return "\n".join(out) + "\n"


GENERATORS = {"cli-reference": cli_reference, "codes-table": codes_table, "default-messages": default_messages,
              "next-actions": next_actions, "settings-table": settings_table}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each ``<!-- generated: NAME -->`` marker by what its generator makes now."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_path}: no generator named {name!r} (known: {sorted(GENERATORS)})")
        return GENERATORS[name]()

    return MARKER.sub(fill, markdown)
