"""The dual-emit adapter: ``@shadow.tool`` wraps a legacy tool behind its flag and logs what the contract would say."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from shadow import _clock as clock
from shadow import _sessions as sessions
from shadow._config import report_internal_error, settings
from shadow._logs import get_logger
from shadow.calllog._pending import PendingCall, ToolSpec
from shadow.calllog._writer import get_writer
from shadow.contract._codes import Code
from shadow.contract._guard import Outcome
from shadow.contract._payloads import Payload, ToolError
from shadow.flags import _db as flagmod
from shadow.flags._db import Mode, Variant
from shadow.integrations import _channels as channels
from shadow.integrations._returns import JsonPayload
from shadow.typing import FlagSource

log = get_logger("shadow.adapter")

F = TypeVar("F", bound=Callable[..., Any])
# Enum members as module constants: ``Mode.LEGACY`` is a class attribute look-up through ``EnumType`` (about
# 0.3 us each on Python 3.11), and an enum's ``__hash__`` runs in Python; both are on every call's path.
_LEGACY: Final = Mode.LEGACY
_SHADOW: Final = Mode.SHADOW
_CUTOVER: Final = Mode.CUTOVER
_ARM_LEGACY: Final = Variant.LEGACY
_STRUCTURED: Final = Variant.STRUCTURED
#: The module whose ``CALL_HOOK`` puts a call on the application's span: not imported here (``import shadow`` needs
#: none of it), read from ``sys.modules`` once ``shadow.calllog.annotate_spans`` or an ``OtlpStore`` loaded it.
_OTEL: Final = "shadow.calllog._otel"
_NO_PAIR: Final = object()  # a call whose framework takes the result as is, not as (content, artifact)


def _fastmcp_shows() -> bool:
    """Whether FastMCP serves the request in progress and shows a tool's exception text to the model: it does
    (``Error calling tool 'x': <text>``) unless its server masks error details (``mask_error_details``)."""
    module = sys.modules.get("fastmcp.server.dependencies")
    if module is None or module.fastmcp_request_ctx.get(None) is None:
        return False
    masks = getattr(module.get_server(), "_mask_error_details", None)
    if not isinstance(masks, bool):
        masks = bool(sys.modules["fastmcp"].settings.mask_error_details)
    return not masks


def _internal_failure(tool: str, exc: Exception, operation: str = "adapter") -> None:
    log.exception("shadow_failed", tool=tool, error_type=type(exc).__name__, operation=operation)
    report_internal_error(operation, exc)
    if settings().strict:
        raise exc


@dataclass(slots=True)
class _Started:
    """A call that is being shadowed: its flag, arm, place in the session, where its flag came from and start times
    (wall, monotonic)."""

    mode: Mode
    variant: Variant
    session_id: str
    seq: int
    epoch: int | None
    provisional: FlagSource | None
    flag_source: str
    t0: int
    p0: int


class _Runner:
    """Everything a wrapped call does around the tool itself, shared by the sync and the async wrapper."""

    __slots__ = ("awaits", "deliver", "flags", "shows", "spec")

    def __init__(self, spec: ToolSpec, flags: FlagSource | None,
                 deliver: Callable[[Payload], Any] | None = None, awaits: bool | None = None,
                 shows: bool | None = None) -> None:
        self.spec = spec
        self.flags = flags
        self.deliver = deliver  # how a framework integration serves the payload (an MCP result, a JSON string)
        # whether the framework awaits a coroutine a plain ``def`` returns (FastMCP, PydanticAI do; LangChain, the
        # Agents SDK and MCPServer do not); ``None``: while FastMCP serves a request, read at each call
        self.awaits = awaits
        # whether the framework shows a raised exception's text to the model (FastMCP does unless it masks error
        # details; MCPServer, LangChain, PydanticAI and the Agents SDK's default failure message do not); ``None``:
        # read at each call, FastMCP's while it serves a request
        self.shows = shows

    def awaits_returned(self) -> bool:
        """Whether the caller awaits a coroutine the tool returns, so shadow may await it in its place."""
        if self.awaits is not None:
            return self.awaits
        module = sys.modules.get("fastmcp.server.dependencies")
        return module is not None and module.fastmcp_request_ctx.get(None) is not None

    def shows_raised(self) -> bool:
        """Whether the model read the text of an exception the tool raised, in legacy (``shows``)."""
        if self.shows is not None:
            return self.shows
        try:
            return _fastmcp_shows()
        except Exception as failure:  # a FastMCP whose internals moved: as if it masked (the generic message)
            _internal_failure(self.spec.name, failure, "adapter.shows")
            return False

    def begin(self) -> _Started | None:
        """The call's flag and arm, or ``None`` to call through (legacy mode, or shadow's own failure).

        The first calls of a process wait for its first flag read (``flags.await_start``, at most
        ``flag_start_wait`` seconds, and not at all when the last-known file or ``SHADOW_FLAGS`` has the flags).
        A call made after that bound without flags is served legacy and resolved by the writer (``_provisional``),
        and its session keeps the legacy arm for the tool until the tool's flag changes (``sessions.hold_late``).
        """
        try:
            source = self.flags or flagmod.current()
            name = self.spec.name
            state = source.state(name)
            if state.mode is _LEGACY:
                if state is not flagmod.LEGACY or not flagmod.is_pending(source, name):
                    if sessions.LATE and name in sessions.LATE:
                        sessions.hold_late("", name, state)  # the flag known after the start: a change releases
                    return None
                if not flagmod.await_start(source, name):
                    sid = sessions.current()
                    sessions.pin_late(sid, name)
                    epoch, seq = sessions.next_position(sid)
                    return _Started(_SHADOW, _ARM_LEGACY, sid, seq, epoch, source, "late", clock.now_ns(),
                                    time.perf_counter_ns())
                return self.begin()  # the flags are known now
            sid = sessions.current()
            variant = state.variant(sid) if state.mode is _CUTOVER else _ARM_LEGACY
            origin = None
            if sessions.LATE and name in sessions.LATE and sessions.hold_late(sid, name, state):
                variant, origin = _ARM_LEGACY, "late"
            epoch, seq = sessions.next_position(sid)
            return _Started(state.mode, variant, sid, seq, epoch, None, origin or flagmod.origin(source, name),
                            clock.now_ns(), time.perf_counter_ns())
        except Exception as exc:
            _internal_failure(self.spec.name, exc, "adapter.flag")
            return None

    def finish(self, started: _Started, args: tuple[Any, ...], kwargs: dict[str, Any], value: Any = None,
               exc: BaseException | None = None) -> Any:
        """Hand the call to the writer; in the structured arm, the payload (as ``deliver`` serves it), else None.

        A framework exception the framework handles itself (``_channels``) is raised again carrying the payload; a
        ``(content, artifact)`` pair the framework expects (``deliver.pairs()``) is judged on its content and
        served as ``(payload, artifact)``.
        """
        latency = time.perf_counter_ns() - started.p0
        artifact: Any = _NO_PAIR
        if (exc is None and type(value) is tuple and len(value) == 2) or started.variant is _STRUCTURED:
            artifact, value = self._paired(value, exc)
        outcome = None
        shown = exc is not None and isinstance(exc, Exception) and self.shows_raised()
        if started.variant is _STRUCTURED and not (
                channels.passes_through(value) if exc is None else
                not isinstance(exc, Exception) or channels.passes_through(exc)):
            try:
                outcome = self.spec.outcome(value, exc, shown)
                outcome = PendingCall(spec=self.spec, mode=started.mode, variant=started.variant, session_id="",
                                      seq=0, started_ns=0, latency_ns=0, args=args, kwargs=kwargs).served(outcome)
            except Exception as failure:
                outcome = Outcome(ToolError.of(Code.INTERNAL_ERROR).payload(), unmapped=True)
                _internal_failure(self.spec.name, failure, "adapter.outcome")
        try:
            call = PendingCall(
                spec=self.spec, mode=started.mode, variant=started.variant, session_id=started.session_id,
                seq=started.seq, epoch=started.epoch, started_ns=started.t0, latency_ns=latency, args=args,
                kwargs=kwargs, value=value, exc=exc, outcome=outcome, flag_source=started.flag_source, shown=shown,
            )
            if started.provisional is not None:  # made before the flags were loaded: the writer resolves it
                from shadow.calllog._provisional import ProvisionalCall

                get_writer().submit(ProvisionalCall(call, started.provisional))
            else:
                otel = sys.modules.get(_OTEL)  # only ``annotate_spans`` sets a hook, and it imports _otel
                hook = None if otel is None else otel.CALL_HOOK
                get_writer().submit(call if hook is None else hook(call))
        except Exception as failure:
            _internal_failure(self.spec.name, failure, "adapter.submit")
        if outcome is None:
            return None
        if exc is not None:
            carried = self._carried(exc, outcome.payload)
            if carried is exc:
                raise exc
            if carried is not None:
                raise carried from exc
        served = self._served(outcome.payload)
        return served if artifact is _NO_PAIR else (served, artifact)

    def _served(self, payload: Payload) -> Any:
        if self.deliver is None:
            return JsonPayload(payload)  # str() is JSON: what a framework that stringifies shows the model
        try:
            return self.deliver(payload)
        except Exception as failure:
            _internal_failure(self.spec.name, failure, "adapter.deliver")
            return payload

    def _carried(self, exc: BaseException, payload: Payload) -> BaseException | None:
        """The exception the framework's own error channel takes in place of the payload, or ``None``."""
        try:
            return channels.raised(exc, payload, self.deliver)
        except Exception as failure:
            _internal_failure(self.spec.name, failure, "adapter.channel")
            return None

    def _paired(self, value: Any, exc: BaseException | None) -> tuple[Any, Any]:
        """(artifact, content) of a call whose framework expects a ``(content, artifact)`` pair, else
        (``_NO_PAIR``, value): the artifact is ``None`` when the call did not return a pair."""
        pairs = getattr(self.deliver, "pairs", None)
        try:
            if pairs is None or not pairs():
                return _NO_PAIR, value
        except Exception as failure:
            _internal_failure(self.spec.name, failure, "adapter.pairs")
            return _NO_PAIR, value
        if exc is None and type(value) is tuple and len(value) == 2:
            return value[1], value[0]
        return None, value
