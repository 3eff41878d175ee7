"""The plain ``@shadow.tool`` under LangChain's ``@tool``: is the tool calling it a ``content_and_artifact`` one?"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, Final

_RUNNERS: Final = frozenset({"_run", "_arun"})  # StructuredTool's methods that call the function
_DEPTH: Final = 12  # frames between the tool's method and this check: the wrapper, the runner, the delivery


def content_and_artifact(wrapper: Callable[..., Any]) -> bool:
    """Whether the LangChain tool running ``wrapper`` right now expects a ``(content, artifact)`` pair.

    LangChain's ``@tool(response_format=...)`` is applied after ``@shadow.tool``, so the option is read at call
    time from the ``StructuredTool`` whose ``_run``/``_arun`` is calling ``wrapper`` (its ``func`` or
    ``coroutine``); ``False`` at once outside a LangChain run.
    """
    config = sys.modules.get("langchain_core.runnables.config")
    if config is None or config.var_child_runnable_config.get() is None:
        return False  # not inside a LangChain run: its tools set the run's config before they call the function
    frame: FrameType | None = sys._getframe(1)
    for _ in range(_DEPTH):
        if frame is None:
            return False
        if frame.f_code.co_name in _RUNNERS:
            tool = frame.f_locals.get("self")
            if tool is not None and wrapper in (getattr(tool, "func", None), getattr(tool, "coroutine", None)):
                return getattr(tool, "response_format", None) == "content_and_artifact"
        frame = frame.f_back
    return False
