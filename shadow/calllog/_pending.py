"""A call's raw facts as the adapter captures them, and the call record the writer thread builds from them."""

from __future__ import annotations

import dataclasses
import datetime as dt
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from shadow import _hostile as hostile
from shadow import _sessions as sessions
from shadow._config import report_internal_error, settings
from shadow._fingerprint import argument_hashes, fingerprint, safe_name
from shadow._ids import new_id
from shadow._logs import get_logger
from shadow._redact import JSONValue, cap, redact_values, scrub_text, secret_values, to_jsonable
from shadow.calllog import _direct as direct
from shadow.calllog import _plain as plain
from shadow.calllog._records import CallRecord, CallRow, new_call_record
from shadow.contract._guard import Outcome, outcome_of_exception, outcome_of_value
from shadow.contract._rules import Rules
from shadow.contract._schema import is_valid
from shadow.flags._db import Mode, Variant
from shadow.integrations import _channels as channels
from shadow.integrations import _context as frameworks

log = get_logger("shadow.adapter")

_DEFAULT_RULES: Final = Rules.default()
_UTC: Final = dt.UTC
_from_ns: Final = dt.datetime.fromtimestamp
_MAX_EXC_TEXT: Final = 500
_PLAIN_TYPES: Final = frozenset({str, int, float, bool, type(None), dict, list, tuple})  # never framework-injected


def guarded(build: Callable[[], Any], fallback: Any) -> Any:
    """One part of a record; a part that cannot be built becomes ``fallback`` so the record still lands."""
    for _attempt in range(3):  # a value mutated by its caller mid-conversion may raise RuntimeError once
        try:
            return build()
        except RuntimeError:
            continue
        except BaseException as exc:  # any exception of the tool's values, but the main thread's exit
            if not hostile.swallowed(exc):
                raise
            hostile.note("record_part_failed")
            log.warning("record_part_failed", error_type=type(exc).__name__)
            report_internal_error("record.part", exc)
            return fallback
    return fallback


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What stays the same for every call of one wrapped tool."""

    name: str
    rules: Rules = _DEFAULT_RULES
    idempotent: bool = True
    signature: inspect.Signature | None = None
    source: str = "live"
    skip: frozenset[str] = frozenset()  # framework-injected parameters and the user's ignore=(...): never logged

    def outcome(self, value: Any, exc: BaseException | None, shown: bool = False) -> Outcome:
        """What the contract says of a call that returned ``value`` or raised ``exc`` (``shown``: its text shown to
        the model by the framework)."""
        if exc is not None:
            return outcome_of_exception(exc, rules=self.rules, idempotent=self.idempotent, tool=self.name, quiet=True,
                                        shown=shown)
        return outcome_of_value(value, rules=self.rules, idempotent=self.idempotent, tool=self.name)


@dataclass(slots=True, kw_only=True)
class PendingCall:
    """A call's raw facts, captured on the hot path; ``build`` (in the writer thread) makes the record.

    Not frozen: a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, about 2 us of the
    caller's time per call for these 15 fields; nothing changes a ``PendingCall`` after it is made.
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
    shown: bool = False  # the framework showed ``exc``'s text to the model (FastMCP without masking)

    def build(self) -> CallRecord:
        """The call record: arguments and legacy payload redacted and capped, the structured payload checked.

        Whatever the tool's values raise (``KeyboardInterrupt`` from a ``__str__``, ``GeneratorExit`` from an
        ``items()``: ``_hostile``) costs the part it spoils; past the parts, a record without any of the values.
        """
        return self._built(as_row=False)  # type: ignore[return-value]

    def build_row(self) -> CallRecord | CallRow:
        """``build()`` for a store that takes rows: a plain call's record as its ``CallRow``, any other call's as
        its ``CallRecord`` (and a subclass's own ``build``, such as the proxy's, is its ``build``)."""
        if type(self).build is not PendingCall.build:
            return self.build()
        return self._built(as_row=True)

    def _built(self, *, as_row: bool) -> CallRecord | CallRow:
        try:
            return self._build(as_row)
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
            latency_us=self.latency_ns // 1000, process=direct.pid(), host=sessions.HOST, source=self.spec.source,
            epoch=self.epoch, flag_source=self.flag_source,
        )

    def _build(self, as_row: bool) -> CallRecord | CallRow:
        limits = settings()
        arguments = guarded(self._arguments, {})
        # a framework's control flow (an interrupt, a deferral) is no outcome of the tool; the proxy's upstream
        # JSON-RPC errors are (they are the upstream server's answers, translated by its rules)
        cancelled = self.exc is not None and (not isinstance(self.exc, Exception) or (
            self.spec.source != "proxy" and channels.passes_through(self.exc)))
        fast = None if cancelled else self._fast(arguments, limits.max_args_bytes, limits.max_payload_bytes, as_row)
        if fast is not None:
            return fast
        outcome = None if cancelled else self.outcome or guarded(self._outcome, None)
        error = outcome.error if outcome is not None else None
        served = outcome.payload if outcome is not None else None
        # values of credential-keyed arguments, wherever they are repeated: exception text, results, other arguments
        secrets: tuple[str, ...] = guarded(lambda: secret_values(arguments), ())
        payload: JSONValue = guarded(
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
            fingerprint=guarded(lambda: fingerprint(arguments), "unfingerprintable"),
            arg_hashes=guarded(lambda: argument_hashes(arguments), None),
            args=guarded(lambda: cap(redact_values(to_jsonable(arguments), secrets), limits.max_args_bytes),
                         "<unavailable>"),
            outcome="cancelled" if cancelled else "error" if error is not None or outcome is None else "ok",
            legacy_payload=guarded(lambda: self._legacy(limits.max_payload_bytes, secrets), "<unavailable>"),
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
            latency_us=self.latency_ns // 1000, process=direct.pid(), host=sessions.HOST, source=self.spec.source,
            epoch=self.epoch, flag_source=self.flag_source, rules_fingerprint=self.spec.rules.fingerprint,
        )

    def _fast(self, arguments: dict[str, Any], max_args: int, max_payload: int,
              as_row: bool) -> CallRecord | CallRow | None:
        """The record of a call that returned plain JSON data, built in one pass (``_direct``): a success no rule
        can call an error, a structured payload already made (cutover), or the rules' reading of the value (an
        error value, read once per distinct value); None when anything is not plain (the general path then)."""
        if self.exc is not None:
            return None
        outcome = self.outcome
        classify = None
        if outcome is None and (not direct.default_results(self.spec) or not plain.never_an_error(self.value)):
            classify = self._outcome
        return direct.record(self.spec, self, arguments, max_args, max_payload, outcome, classify, as_row)

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
        if not skip:
            for v in bound.values():
                if type(v) not in plain_types:
                    break
            else:
                return bound  # nothing to leave out (the common case): the bound dict itself, a fresh one
        return {k: v for k, v in bound.items()
                if k not in skip and (type(v) in plain_types or not frameworks.is_injected_value(v))}

    def _outcome(self) -> Outcome:
        return self.spec.outcome(self.value, self.exc, self.shown)

    def _legacy(self, max_bytes: int, secrets: tuple[str, ...] = ()) -> JSONValue:
        if self.exc is not None:
            text = scrub_text(str(redact_values(str(self.exc), secrets)))[:_MAX_EXC_TEXT]
            if self.shown:
                return {"exception": type(self.exc).__qualname__, "message": text, "shown": True}
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
