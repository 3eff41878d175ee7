"""PydanticAI: ``@pydantic_ai_tool(agent)`` in place of ``@agent.tool``/``@agent.tool_plain``."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from shadow.contract._rules import Rules
from shadow.integrations._context import injected_parameters
from shadow.integrations._serve import ShadowOptions, check_function
from shadow.typing import FlagSource


def pydantic_ai_tool(
    agent: Any, fn: Callable[..., Any] | None = None, /, *, name: str | None = None, rules: Rules | None = None,
    idempotent: bool = True, flags: FlagSource | None = None, ignore: Iterable[str] = (), **options: Any,
) -> Any:
    """Register ``fn`` on the PydanticAI ``agent`` behind its shadow flag: ``@pydantic_ai_tool(agent)``.

    A function whose first parameter is a ``RunContext`` is registered with ``agent.tool`` (the context is not
    logged), any other with ``agent.tool_plain``; ``options`` (``description=``, ``retries=``, ``prepare=``, ...) go
    there. The schema is the one PydanticAI generates. Calls are logged in the run's conversation
    (``agent.run(..., conversation_id=...)``, else the run). In cutover the model reads the payload as JSON; a
    ``ModelRetry`` or ``ToolFailed`` is raised again carrying it, so ``retries=`` still counts, and ``CallDeferred``
    / ``ApprovalRequired`` pass through. Put the ``shadow describe --tool`` paragraph in ``description=``.
    """
    if not callable(getattr(agent, "tool", None)) or not callable(getattr(agent, "tool_plain", None)):
        raise TypeError(f"pydantic_ai_tool(agent) takes a pydantic_ai.Agent first, not {type(agent).__name__}")
    shadow = ShadowOptions(name=name, rules=rules, idempotent=idempotent, flags=flags, ignore=ignore, awaits=True,
                           shows=False)

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        check_function(function, "pydantic_ai_tool(agent)")
        try:
            signature: inspect.Signature | None = inspect.signature(function)
        except (TypeError, ValueError):
            signature = None
        first = next(iter(signature.parameters), None) if signature is not None else None
        takes_context = first is not None and first in injected_parameters(function, signature)
        wrapper = shadow.wrap(function)
        register_on = agent.tool if takes_context else agent.tool_plain
        register_on(wrapper, name=name, **options)
        return wrapper

    return register if fn is None else register(fn)
