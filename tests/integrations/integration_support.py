"""Helpers of the integration tests: the legacy tools, the calls made, records, the loop report."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

import shadow
from shadow.calllog._records import CallRecord
from shadow.testing import InMemoryStore

#: Sessions in different arms at 50 % (``shadow.flags.bucket``): conv-A 27, conv-B 77, thread-A 33, thread-B 63.
LOW, HIGH = "conv-A", "conv-B"


def calls(store: InMemoryStore, tool: str | None = None) -> list[CallRecord]:
    """The call records in ``store`` so far (after a flush), in call order."""
    assert shadow.flush(30)
    found = [r for r in store.records.values() if isinstance(r, CallRecord) and (tool is None or r.tool == tool)]
    return sorted(found, key=lambda r: (r.ts, r.seq))


def served_error(text: str) -> dict[str, Any]:
    """The error of a cutover payload served as JSON text, checked against the contract."""
    import json

    payload = json.loads(text)
    shadow.validate(payload)
    assert payload["ok"] is False
    error: dict[str, Any] = payload["error"]
    return error


def loop_counts(url: str, tmp_path: Path, tool: str) -> tuple[int, int]:
    """(errors, loops) of ``tool`` in the loop-rate report of the call log at ``url``."""
    from shadow.analytics._report import loop_rate_report
    from shadow.analytics._warehouse import Warehouse

    assert shadow.flush(30)
    with Warehouse.open(tmp_path / "w.duckdb") as warehouse:
        warehouse.sync(url)
        report = loop_rate_report(warehouse, tool=tool)
    (row,) = report.by_tool
    return row.errors, sum(arm.loops for arm in row.variants)


Priority = Literal["low", "high"]


def legacy_tools() -> dict[str, Any]:
    """Fresh legacy tools (a framework may mark a function it registers): a dict tool, a str tool, an async tool."""

    def get_task(task_id: str, priority: Priority = "low") -> dict[str, Any]:
        """Fetch a task.

        Args:
            task_id: The task's id, for example T-1.
            priority: Which queue to look in.
        """
        return {"id": task_id, "title": "Ship", "priority": priority}

    def lookup(item_id: str, limit: int = 5) -> str:
        """Look an item up.

        Args:
            item_id: The item's id.
            limit: At most this many results.
        """
        return "Error: not found" if item_id == "0" else f"item {item_id}"

    async def search(query: str, kind: Priority = "low") -> str:
        """Search the catalogue.

        Args:
            query: What to look for.
            kind: Which index.
        """
        return "Error: rate limited, try again later" if query == "busy" else f"found {query}"

    return {"get_task": get_task, "lookup": lookup, "search": search}


#: (tool, arguments) pairs: a dict success, a str "Error: ..." and a str success, an async error and success.
CALLS = [("get_task", {"task_id": "T-1"}), ("lookup", {"item_id": "0"}), ("lookup", {"item_id": "7", "limit": 2}),
         ("search", {"query": "busy"}), ("search", {"query": "cats", "kind": "high"})]


class Item(BaseModel):
    """An item, as a legacy tool returns it."""

    id: str
    title: str


def model_tool() -> Any:
    """A fresh legacy tool returning a pydantic model (an object output schema in MCP); "0" is not found."""

    def get_item(item_id: str) -> Item:
        """Fetch an item."""
        if item_id == "0":
            raise KeyError("no such item")
        return Item(id=item_id, title="Ship")

    return get_item
