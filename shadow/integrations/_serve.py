"""What every integration shares: the shadow options, the wrapped function, the payload as the model's JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from shadow.contract._payloads import Payload
from shadow.contract._rules import Rules
from shadow.typing import FlagSource


@dataclass(frozen=True, slots=True, kw_only=True)
class ShadowOptions:
    """The options of ``@shadow.tool`` an integration passes on."""

    name: str | None = None
    rules: Rules | None = None
    idempotent: bool = True
    flags: FlagSource | None = None
    ignore: Iterable[str] = ()
    #: whether the framework awaits a coroutine a plain ``def`` tool returns (``None``: read at each call)
    awaits: bool | None = None
    #: whether the framework shows a raised exception's text to the model (``None``: read at each call, FastMCP's)
    shows: bool | None = None

    def wrap(self, fn: Callable[..., Any], deliver: Callable[[Payload], Any] | None = None,
             name: str | None = None) -> Callable[..., Any]:
        """``fn`` behind its flag, as ``@shadow.tool`` would wrap it, serving a cutover payload through ``deliver``."""
        from shadow._decorator import _check_options, _wrap

        _check_options(name or self.name, self.rules, self.flags)
        wrapped: Callable[..., Any] = _wrap(fn, name=name or self.name, rules=self.rules, idempotent=self.idempotent,
                                            flags=self.flags, ignore=self.ignore, deliver=deliver,
                                            awaits=self.awaits, shows=self.shows)
        return wrapped


def payload_json(payload: Payload) -> str:
    """The payload as compact JSON text, as a model reads it."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def check_function(fn: object, decorator: str) -> None:
    """A clear error when an integration decorator gets something other than a function."""
    if not callable(fn) or isinstance(fn, type):
        raise TypeError(f"{decorator} decorates a function, not {type(fn).__name__}")
