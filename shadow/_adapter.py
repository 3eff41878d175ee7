"""The dual-emit adapter: ``@shadow.tool`` wraps a legacy tool behind its flag and logs what the contract would say."""

from __future__ import annotations

import dataclasses
import datetime as dt
import inspect
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from shadow import _clock as clock
from shadow import _hostile as hostile
from shadow import _plain as plain
from shadow import _sessions as sessions
from shadow._config import report_internal_error, settings
from shadow._fingerprint import argument_hashes, fingerprint
from shadow._ids import new_id
from shadow._logs import get_logger
from shadow._redact import JSONValue, cap, redact_values, safe_name, scrub_text, secret_values, to_jsonable
from shadow.calllog._records import CallRecord, new_call_record
from shadow.calllog._writer import get_writer
from shadow.contract._codes import Code
from shadow.contract._guard import Outcome, outcome_of_exception, outcome_of_value
from shadow.contract._payloads import Payload, ToolError
from shadow.contract._rules import Rules
from shadow.contract._schema import is_valid
from shadow.flags import _db as flagmod
from shadow.flags._db import Mode, Variant
from shadow.integrations import _channels as channels
from shadow.integrations import _context as frameworks
from shadow.integrations._returns import JsonPayload
from shadow.typing import FlagSource

log = get_logger("shadow.adapter")

F = TypeVar("F", bound=Callable[..., Any])
_DEFAULT_RULES: Final = Rules.default()
_PID_CACHE: list[str] = []
_UTC: Final = dt.UTC
_from_ns: Final = dt.datetime.fromtimestamp
# Enum members as module constants: ``Mode.LEGACY`` is a class attribute look-up through ``EnumType`` (about
# 0.3 us each on Python 3.11), and an enum's ``__hash__`` runs in Python; both are on every call's path.
_LEGACY: Final = Mode.LEGACY
_SHADOW: Final = Mode.SHADOW
_CUTOVER: Final = Mode.CUTOVER
_ARM_LEGACY: Final = Variant.LEGACY
_STRUCTURED: Final = Variant.STRUCTURED
_MAX_EXC_TEXT: Final = 500
_NO_PAIR: Final = object()  # a call whose framework takes the result as is, not as (content, artifact)
_PLAIN_TYPES: Final = frozenset({str, int, float, bool, type(None), dict, list, tuple})  # never framework-injected
#: What a call goes through on its way to the writer, or None (the default: nothing, one global read per call).
#: ``shadow.calllog.annotate_spans()`` (called by ``OtlpStore``) sets it to put the record on the caller's span.
CALL_HOOK: Callable[[PendingCall], Any] | None = None


def _pid() -> str:
    """This process's id as records store it (cached; a forked child reads its own)."""
    if not _PID_CACHE:
        _PID_CACHE.append(str(os.getpid()))
    return _PID_CACHE[0]


os.register_at_fork(after_in_child=_PID_CACHE.clear)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What stays the same for every call of one wrapped tool."""

    name: str
    rules: Rules = _DEFAULT_RULES
    idempotent: bool = True
    signature: inspect.Signature | None = None
    source: str = "live"
    skip: frozenset[str] = frozenset()  # framework-injected parameters and the user's ignore=(...): never logged

    def outcome(self, value: Any, exc: BaseException | None) -> Outcome:
        """What the contract says of a call that returned ``value`` or raised ``exc``."""
        if exc is not None:
            return outcome_of_exception(exc, rules=self.rules, idempotent=self.idempotent, tool=self.name, quiet=True)
        return outcome_of_value(value, rules=self.rules, idempotent=self.idempotent, tool=self.name)


@dataclass(slots=True, kw_only=True)
class PendingCall:
    """A call's raw facts, captured on the hot path; ``build`` (in the writer thread) makes the record.

    Not frozen: a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, about 2 us of the
    caller's time per call for these 14 fields; nothing changes a ``PendingCall`` after it is made.
    """

    spec: ToolSpec
    mode: Mode
    variant: Variant
    session_id: str
    seq: int
    started_ns: int
    latency_ns: int
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    value: Any = None
    exc: BaseException | None = None
    outcome: Outcome | None = None
    epoch: int | None = None
    flag_source: str | None = None

    def build(self) -> CallRecord:
        """The call record: arguments and legacy payload redacted and capped, the structured payload checked.

        Whatever the tool's values raise (``KeyboardInterrupt`` from a ``__str__``, ``GeneratorExit`` from an
        ``items()``: ``_hostile``) costs the part it spoils; past the parts, a record without any of the values.
        """
        try:
            return self._build()
        except BaseException as exc:
            if not hostile.swallowed(exc):
                raise
            hostile.note("record_without_values")
            report_internal_error("record.build", exc)
            return self._bare()

    def _bare(self) -> CallRecord:
        """The record of this call without anything taken from the tool's values (their build raised)."""
        return new_call_record(
            id=new_id(), session_id=self.session_id, seq=self.seq, ts=_from_ns(self.started_ns / 1e9, _UTC),
            tool=self.spec.name, mode=self.mode._value_, variant=self.variant._value_,
            fingerprint="unfingerprintable", arg_hashes=None, args="<unavailable>", outcome="error",
            legacy_payload="<unavailable>", new_payload=None, code=None, retryable=None, next_action=None,
            retry_after_ms=None, error_field=None, rule=None, unmapped=True, schema_valid=False,
            latency_us=self.latency_ns // 1000, process=_pid(), host=sessions.HOST, source=self.spec.source,
            epoch=self.epoch, flag_source=self.flag_source,
        )

    def _build(self) -> CallRecord:
        limits = settings()
        arguments = hostile.guarded(self._arguments, {})
        # a framework's control flow (an interrupt, a deferral) is no outcome of the tool; the proxy's upstream
        # JSON-RPC errors are (they are the upstream server's answers, translated by its rules)
        cancelled = self.exc is not None and (not isinstance(self.exc, Exception) or (
            self.spec.source != "proxy" and channels.passes_through(self.exc)))
        fast = None if cancelled else self._fast(arguments, limits.max_args_bytes, limits.max_payload_bytes)
        if fast is not None:
            return fast
        outcome = None if cancelled else self.outcome or hostile.guarded(self._outcome, None)
        error = outcome.error if outcome is not None else None
        served = outcome.payload if outcome is not None else None
        # values of credential-keyed arguments, wherever the tool echoed them (exception text, results)
        secrets: tuple[str, ...] = hostile.guarded(lambda: secret_values(arguments), ())
        payload: JSONValue = hostile.guarded(
            lambda: cap(redact_values(to_jsonable(served), secrets), limits.max_payload_bytes), None)
        context = error.context if error is not None and error.context else {}
        retry_after = context.get("retry_after_ms")
        field = context.get("field")
        return CallRecord(
            id=new_id(),
            session_id=safe_name(self.session_id),
            seq=self.seq,
            ts=dt.datetime.fromtimestamp(self.started_ns / 1e9, dt.UTC),
            tool=safe_name(self.spec.name),
            mode=self.mode.value,
            variant=self.variant.value,
            fingerprint=hostile.guarded(lambda: fingerprint(arguments), "unfingerprintable"),
            arg_hashes=hostile.guarded(lambda: argument_hashes(arguments), None),
            args=hostile.guarded(lambda: cap(to_jsonable(arguments), limits.max_args_bytes), "<unavailable>"),
            outcome="cancelled" if cancelled else "error" if error is not None or outcome is None else "ok",
            legacy_payload=hostile.guarded(lambda: self._legacy(limits.max_payload_bytes, secrets), "<unavailable>"),
            new_payload=payload,
            code=error.code.value if error is not None else None,
            retryable=error.retryable if error is not None else None,
            next_action=error.next_action.value if error is not None else None,
            retry_after_ms=retry_after if isinstance(retry_after, int) else None,
            error_field=field[:200] if isinstance(field, str) else None,
            rule=outcome.rule if outcome is not None else None,
            unmapped=outcome.unmapped if outcome is not None else not cancelled,
            # the contract builds its payloads valid; an error's context comes from rules, so it is checked
            schema_valid=cancelled or (outcome is not None and (error is None or is_valid(served))),
            latency_us=self.latency_ns // 1000,
            process=_pid(),
            host=sessions.HOST,
            source=self.spec.source,
            epoch=self.epoch,
            flag_source=self.flag_source,
            rules_fingerprint=self.spec.rules.fingerprint,
        )

    def _fast(self, arguments: dict[str, Any], max_args: int, max_payload: int) -> CallRecord | None:
        """The record of a call that returned plain JSON data no rule can call an error; None otherwise."""
        served: Any = None  # the structured payload already made (cutover), else {"ok": true, "data": value}
        if self.exc is not None:
            return None
        if self.outcome is not None:
            if self.outcome.error is not None or self.outcome.rule is not None or self.outcome.unmapped:
                return None
            served = self.outcome.payload
        elif self.spec.rules.result_rules is not _DEFAULT_RULES.result_rules or not plain.never_an_error(self.value):
            return None
        try:
            if not (plain.clean(arguments) and plain.clean(self.value) and (served is None or plain.clean(served))):
                return None
            args, args_size = plain.snapshot(arguments)
            value, value_size = plain.snapshot(self.value)
            payload, payload_size = ({"ok": True, "data": value}, value_size + 24) if served is None else (
                plain.snapshot(served))
        except (RuntimeError, TypeError, ValueError):  # changed by its caller meanwhile: take the general path
            return None
        if args_size > max_args or value_size > max_payload or payload_size > max_payload:
            return None
        return new_call_record(
            id=new_id(), session_id=safe_name(self.session_id), seq=self.seq,
            ts=_from_ns(self.started_ns / 1e9, _UTC), tool=safe_name(self.spec.name), mode=self.mode._value_,
            variant=self.variant._value_, fingerprint=plain.fingerprint(args),
            arg_hashes=plain.argument_hashes(args) if isinstance(args, dict) else None, args=args, outcome="ok",
            legacy_payload=value, new_payload=payload, code=None, retryable=None,
            next_action=None, retry_after_ms=None, error_field=None, rule=None, unmapped=False, schema_valid=True,
            latency_us=self.latency_ns // 1000, process=_pid(), host=sessions.HOST, source=self.spec.source,
            epoch=self.epoch, flag_source=self.flag_source, rules_fingerprint=self.spec.rules.fingerprint,
        )

    def _arguments(self) -> dict[str, Any]:
        signature = self.spec.signature
        if signature is None:
            return {**{f"_{i}": a for i, a in enumerate(self.args)}, **self.kwargs}
        skip = self.spec.skip
        names = plain.positional_names(signature)
        if names is not None and len(self.args) <= len(names[0]) and (not self.kwargs or not names[1]):
            bound = dict(zip(names[0], self.args, strict=False))
            if self.kwargs:
                bound.update(self.kwargs)
            if names[2]:  # the first parameter is self or cls
                skip = skip | {names[0][0]}
        else:
            bound = signature.bind_partial(*self.args, **self.kwargs).arguments
            first = next(iter(signature.parameters), None)
            if first in ("self", "cls"):
                skip = skip | {first}
        plain_types = _PLAIN_TYPES
        return {k: v for k, v in bound.items()
                if k not in skip and (type(v) in plain_types or not frameworks.is_injected_value(v))}

    def _outcome(self) -> Outcome:
        return self.spec.outcome(self.value, self.exc)

    def _legacy(self, max_bytes: int, secrets: tuple[str, ...] = ()) -> JSONValue:
        if self.exc is not None:
            text = scrub_text(str(redact_values(str(self.exc), secrets)))[:_MAX_EXC_TEXT]
            return {"exception": type(self.exc).__qualname__, "message": text}
        return cap(redact_values(to_jsonable(self.value), secrets), max_bytes)

    def served(self, outcome: Outcome) -> Outcome:
        """``outcome`` as the model may see it: values of credential-keyed arguments echoed in it redacted."""
        try:
            secrets = secret_values(self._arguments())
        except TypeError:  # arguments that do not bind to the parameters: no names, so nothing known as secret
            return outcome
        if not secrets:
            return outcome
        return dataclasses.replace(outcome, payload=redact_values(outcome.payload, secrets))  # type: ignore[arg-type]


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

    __slots__ = ("deliver", "flags", "spec")

    def __init__(self, spec: ToolSpec, flags: FlagSource | None,
                 deliver: Callable[[Payload], Any] | None = None) -> None:
        self.spec = spec
        self.flags = flags
        self.deliver = deliver  # how a framework integration serves the payload (an MCP result, a JSON string)

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
        if started.variant is _STRUCTURED and not (
                channels.passes_through(value) if exc is None else
                not isinstance(exc, Exception) or channels.passes_through(exc)):
            try:
                outcome = self.spec.outcome(value, exc)
                outcome = PendingCall(spec=self.spec, mode=started.mode, variant=started.variant, session_id="",
                                      seq=0, started_ns=0, latency_ns=0, args=args, kwargs=kwargs).served(outcome)
            except Exception as failure:
                outcome = Outcome(ToolError.of(Code.INTERNAL_ERROR).payload(), unmapped=True)
                _internal_failure(self.spec.name, failure, "adapter.outcome")
        try:
            call = PendingCall(
                spec=self.spec, mode=started.mode, variant=started.variant, session_id=started.session_id,
                seq=started.seq, epoch=started.epoch, started_ns=started.t0, latency_ns=latency, args=args,
                kwargs=kwargs, value=value, exc=exc, outcome=outcome, flag_source=started.flag_source,
            )
            if started.provisional is not None:  # made before the flags were loaded: the writer resolves it
                from shadow._provisional import ProvisionalCall

                get_writer().submit(ProvisionalCall(call, started.provisional))
            else:
                get_writer().submit(call if CALL_HOOK is None else CALL_HOOK(call))
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
