"""The report's text sections line up their columns."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from shadow.analytics import _render_sections as sections


def _tool(name: str, shapes: list[tuple[int, str]]) -> Any:
    unmapped = [SimpleNamespace(errors=n, shape=shape) for n, shape in shapes]
    return SimpleNamespace(tool=name, recommendation=SimpleNamespace(action="hold", reasons=["more errors"]),
                           power=None, evidence=SimpleNamespace(unmapped=unmapped, codes=[]))


def test_the_unmapped_shapes_line_up_under_tools_of_different_name_lengths(monkeypatch: Any) -> None:
    monkeypatch.setattr(sections, "rules_note", lambda report: "")
    report: Any = SimpleNamespace(by_tool=[_tool("reserve_room", [(268, "room <room> is not free")]),
                                           _tool("book", [(12, "no seats left on train <train>")])])
    lines = sections.decisions(report, 120, wide=False)
    rows = [line for line in lines if "<" in line]
    assert len(rows) == 2
    assert rows[0].index("room <room>") == rows[1].index("no seats")  # the shapes start in one column
    assert rows[0].index("268") + 3 == rows[1].index("12") + 2  # the counts right-aligned in one column
