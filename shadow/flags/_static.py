"""Flags fixed in memory: ``StaticFlags``, which ``SHADOW_FLAGS`` pins in front of the database's flags."""

from __future__ import annotations

from collections.abc import Mapping

from shadow.flags._model import KILL_SWITCH, LEGACY, FlagState, Mode
from shadow.flags._start import is_pending, logs_any, origin, wait_for
from shadow.typing import FlagSource


class StaticFlags:
    """Flags fixed in memory, for example from ``SHADOW_FLAGS`` in front of the database."""

    def __init__(self, states: Mapping[str, FlagState], fallback: FlagSource | None = None, *,
                 source: str = "custom") -> None:
        self.states = dict(states)
        self.fallback = fallback
        self.source = source  # what ``origin`` says of a pinned flag: "env" for SHADOW_FLAGS

    def state(self, tool: str) -> FlagState:
        """The pinned flag of ``tool``, else ``'*'``'s, else the fallback's."""
        found = self.states.get(tool) or self.states.get(KILL_SWITCH)
        if found is not None:
            return found
        return self.fallback.state(tool) if self.fallback is not None else LEGACY

    def pending(self, tool: str) -> bool:
        """Whether ``tool``'s flag is not known yet (not pinned here, and the fallback has not loaded)."""
        if tool in self.states or KILL_SWITCH in self.states:
            return False
        return self.fallback is not None and is_pending(self.fallback, tool)

    def wait(self, timeout: float | None = 5.0) -> bool:
        """Block until the fallback's flags are loaded (True at once without one)."""
        return wait_for(self.fallback, timeout) if self.fallback is not None else True

    def origin(self, tool: str) -> str:
        """``source`` for a pinned flag, else where the fallback had it from."""
        if tool in self.states or KILL_SWITCH in self.states or self.fallback is None:
            return self.source
        return origin(self.fallback, tool)

    def logs_any(self) -> bool:
        """Whether a pin or the fallback puts any tool in shadow or cutover."""
        if any(s.mode is not Mode.LEGACY for s in self.states.values()):
            return True
        if KILL_SWITCH in self.states:
            return False  # every other tool pinned legacy
        return self.fallback is not None and logs_any(self.fallback)
