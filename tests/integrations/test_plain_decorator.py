"""The plain ``@shadow.tool`` under a framework's decorator: injected parameters, ``ignore=``, sessions, order."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from integration_support import calls

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

FRAMEWORKS = ("fastmcp", "mcp", "langchain_core", "agents", "pydantic_ai")


def test_shadow_and_its_integrations_import_no_framework_until_one_is_used() -> None:
    code = textwrap.dedent(f"""
        import sys
        import shadow, shadow.integrations
        from shadow.integrations import _context
        from shadow.testing import InMemoryFlags, recording

        @shadow.tool(flags=InMemoryFlags({{"f": "shadow"}}))
        def f(ctx: "RunContext", q: str) -> str:
            return "Error: not found"

        with recording():
            f(None, "x")
        print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "[]", done.stderr


def test_ignore_leaves_a_users_per_call_value_out_of_args_and_fingerprints(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    @shadow.tool(flags=flags, ignore=("request_id",))
    def book(room: str, request_id: str) -> str:
        return "Error: room is taken"

    flags.set("book", "shadow")
    with shadow.session("task-1"):
        book("R1", "req-1")
        book("R1", request_id="req-2")
    first, second = calls(log)
    assert first.args == second.args == {"room": "R1"}
    assert first.fingerprint == second.fingerprint


def test_ignore_names_a_parameter_the_tool_does_not_take_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"'request', which .* does not take; its parameters are room, request_id"):
        shadow.tool(ignore=("request",))(lambda room, request_id: None)
    with pytest.raises(TypeError, match=r'ignore=\("request_id",\)'):
        shadow.tool(ignore="request_id")(lambda room, request_id: None)  # type: ignore[arg-type]


def test_a_dict_return_keeps_its_annotation_and_a_str_return_admits_the_payload() -> None:
    def as_dict(x: int) -> dict[str, Any]:
        return {}

    def as_str(x: int) -> str:
        return ""

    assert inspect.signature(shadow.tool(as_dict), eval_str=True).return_annotation == dict[str, Any]
    widened = inspect.signature(shadow.tool(as_str)).return_annotation
    assert str in widened.__args__ and len(widened.__args__) == 3
    assert inspect.signature(as_str, eval_str=True).return_annotation is str  # the user's function is untouched


def test_a_pydantic_model_is_logged_and_fingerprinted_by_its_fields(flags: InMemoryFlags, log: InMemoryStore) -> None:
    from integration_support import Item

    from shadow._redact import to_jsonable

    assert to_jsonable(Item(id="1", title="Ship")) == {"id": "1", "title": "Ship"}

    @shadow.tool(flags=flags)
    def save(item: Item) -> Item:
        return item

    flags.set("save", "shadow")
    with shadow.session("task-1"):
        save(Item(id="1", title="Ship"))
        save(Item(id="2", title="Ship"))
    first, second = calls(log)
    assert first.args == {"item": {"id": "1", "title": "Ship"}}
    assert first.legacy_payload == {"id": "1", "title": "Ship"}
    assert first.fingerprint != second.fingerprint  # not one "<Item>" marker for every model
