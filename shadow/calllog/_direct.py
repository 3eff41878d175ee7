"""A plain call's record in one pass: each value encoded once, a tool's constants shared, a repeated error read once.

The record of a call whose arguments and result are plain JSON data (``_plain.clean``) needs no conversion, no
redaction and no general validation: this module builds it from the call's facts. What is the same for every call
of a tool (its stored name, its rules' fingerprint) is worked out once per tool; what the default result rules make
of an error value (``{"error": "Bad request"}``) is worked out once per value and reused (``Reading``), since those
rules read nothing but the value. Anything else (a value that is not plain, a payload too large) returns ``None``:
the general path then builds the record.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson

from shadow import _sessions as sessions
from shadow._fingerprint import safe_name
from shadow._ids import new_id
from shadow.calllog import _plain as plain
from shadow.calllog._records import CallRecord, CallRow, new_call_record, new_call_row
from shadow.contract._builtin import RESULT_RULES
from shadow.contract._guard import Outcome
from shadow.contract._schema import is_valid

_UTC: Final = dt.UTC
_from_ns: Final = dt.datetime.fromtimestamp
_dumps: Final = orjson.dumps
#: What orjson would encode in its own way is refused, as ``clean`` refuses it: such a value takes the general path.
_STRICT: Final = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
_loads: Final = orjson.loads
_clean: Final = plain.clean
_MAX_READINGS: Final = 2048  # distinct error values remembered (a few hundred bytes each)
_MAX_TOOLS: Final = 4096
_PID_CACHE: list[str] = []


def pid() -> str:
    """This process's id as records store it (cached; a forked child reads its own)."""
    if not _PID_CACHE:
        _PID_CACHE.append(str(os.getpid()))
    return _PID_CACHE[0]


os.register_at_fork(after_in_child=_PID_CACHE.clear)


@dataclass(frozen=True, slots=True)
class Reading:
    """What the rules make of one error value: everything its record takes from the outcome, the payload as JSON."""

    payload: bytes  # the structured payload, encoded
    code: str | None
    retryable: bool | None
    next_action: str | None
    retry_after_ms: int | None
    error_field: str | None
    rule: str | None
    unmapped: bool
    schema_valid: bool


def reading(outcome: Outcome) -> Reading | None:
    """The parts of a record ``outcome`` decides; ``None`` when its payload is not plain JSON (the general path)."""
    served = outcome.payload
    if not _clean(served):
        return None
    error = outcome.error
    if error is None:
        return Reading(_dumps(served), None, None, None, None, None, outcome.rule, outcome.unmapped, True)
    context = error.context if error.context else {}
    retry_after, field = context.get("retry_after_ms"), context.get("field")
    return Reading(_dumps(served), error.code._value_, error.retryable, error.next_action._value_,
                   retry_after if isinstance(retry_after, int) else None,
                   field[:200] if isinstance(field, str) else None, outcome.rule, outcome.unmapped,
                   is_valid(served))


#: Readings of error values under the default result rules, by (idempotent, the value's JSON). The default rules
#: read only the value (its text, its status, its shape), so one value always gives the same outcome.
_readings: dict[tuple[bool, bytes], Reading | None] = {}
#: Per tool (by the id of its ``ToolSpec``, checked): the spec, its stored name, its rules' fingerprint.
_tools: dict[int, tuple[object, str, str]] = {}
#: The last session ids stored, safe (``safe_name``): most calls repeat the previous call's session.
_sessions: dict[str, str] = {}


def _tool(spec: Any) -> tuple[object, str, str]:
    found = _tools.get(id(spec))
    if found is None or found[0] is not spec:
        found = (spec, safe_name(spec.name), spec.rules.fingerprint)
        if len(_tools) >= _MAX_TOOLS:
            _tools.clear()
        _tools[id(spec)] = found
    return found


def _session(session_id: str) -> str:
    found = _sessions.get(session_id)
    if found is None:
        found = safe_name(session_id)
        if len(_sessions) >= _MAX_TOOLS:
            _sessions.clear()
        _sessions[session_id] = found
    return found


def default_results(spec: Any) -> bool:
    """Whether ``spec``'s result rules are the built-in ones (``Rules.default()`` with exception rules added or not)."""
    return spec.rules.result_rules is RESULT_RULES and not spec.rules.text_is_data


def record(spec: Any, call: Any, arguments: dict[str, Any], max_args: int, max_payload: int,
           outcome: Outcome | None, classify: Callable[[], Outcome] | None,
           as_row: bool = False) -> CallRecord | CallRow | None:
    """The record of ``call`` (a ``PendingCall`` that returned a value), or ``None`` for the general path.

    ``outcome`` is the payload made on the caller's side (cutover), else ``classify`` reads the value (the rules);
    with neither, the value must be one no default rule can call an error. ``as_row``: the record as the
    ``CallRow`` a store that takes rows inserts (each value encoded once, none decoded again).
    """
    try:
        return _record(spec, call, arguments, max_args, max_payload, outcome, classify, as_row)
    except (RuntimeError, TypeError, ValueError):  # a value changed by its caller meanwhile: the general path
        return None


def _record(spec: Any, call: Any, arguments: dict[str, Any], max_args: int, max_payload: int,
            outcome: Outcome | None, classify: Callable[[], Outcome] | None,
            as_row: bool) -> CallRecord | CallRow | None:
    value = call.value
    if not _clean(arguments):
        return None
    args_json = _dumps(arguments)
    # past its limit a value is stored capped, as the general path stores it, but measured by orjson, and a result
    # is checked clean only in what is kept of it: the general path's conversion, scrubbing and repeated canonical
    # encodings cost a search tool's 500 results 20 ms a record
    stored_args = args_json if len(args_json) <= max_args else _dumps(plain.capped(_loads(args_json), max_args))
    value_json = _dumps(value, option=_STRICT)  # the size, before a walk of what may be cut away
    value_size = len(value_json)
    big_value = value_size > max_payload
    if big_value:
        kept = plain.capped_big(value, max_payload)
        if kept is None:
            return None
        stored_value = _dumps(kept)
    elif _clean(value):
        stored_value = value_json
    else:
        return None
    found: Reading | None
    if outcome is not None:
        found = reading(outcome)
    elif classify is None:
        found = None  # a success: {"ok": true, "data": value}
    elif default_results(spec) and not big_value:  # a big value's reading is not kept: its key would be too
        key = (spec.idempotent, value_json)
        found = _readings.get(key)
        if found is None:
            if key in _readings:
                return None  # its payload is not plain JSON
            try:
                found = reading(classify())
            except Exception:  # the general path asks the rules again, guarded
                return None
            if len(_readings) >= _MAX_READINGS:
                _readings.clear()
            _readings[key] = found
    else:
        try:
            found = reading(classify())
        except Exception:
            return None
    if found is None and (outcome is not None or classify is not None):
        return None
    if found is None:
        if value_size + 24 > max_payload:
            payload = plain.capped_big({"ok": True, "data": value}, max_payload)
            if payload is None:
                return None
            payload_json = _dumps(payload)
        else:
            payload_json = b'{"ok":true,"data":%b}' % value_json
        code = retryable = next_action = retry_after = field = rule = None
        unmapped, schema_valid = False, True
    else:
        payload_json = found.payload
        if len(payload_json) > max_payload:
            return None
        code, retryable, next_action = found.code, found.retryable, found.next_action
        retry_after, field, rule = found.retry_after_ms, found.error_field, found.rule
        unmapped, schema_valid = found.unmapped, found.schema_valid
    tool = _tool(spec)
    args = _loads(args_json)  # fingerprinted as encoded (a caller may change its own values meanwhile)
    hashes, fingerprint = plain.argument_hashes(args), plain.fingerprint(args)
    record_id, session_id, ts = new_id(), _session(call.session_id), _from_ns(call.started_ns / 1e9, _UTC)
    latency, outcome_text = call.latency_ns // 1000, "ok" if code is None else "error"
    mode, variant, process = call.mode._value_, call.variant._value_, pid()
    if as_row:
        return new_call_row(values=(
            record_id, session_id, call.seq, ts, tool[1], mode, variant, fingerprint, _dumps(hashes).decode(),
            stored_args.decode(), outcome_text, stored_value.decode(), payload_json.decode(), code, retryable,
            next_action, retry_after, field, rule, unmapped, schema_valid, latency, process, sessions.HOST,
            spec.source, call.epoch, call.flag_source, tool[2]))
    legacy = _loads(stored_value)
    # as the general path: a success's data is the legacy copy
    new_payload: Any = {"ok": True, "data": legacy} if found is None and not big_value else _loads(payload_json)
    return new_call_record(
        id=record_id, session_id=session_id, seq=call.seq, ts=ts, tool=tool[1], mode=mode, variant=variant,
        fingerprint=fingerprint, arg_hashes=hashes, args=args if stored_args is args_json else _loads(stored_args),
        outcome=outcome_text,
        legacy_payload=legacy, new_payload=new_payload, code=code, retryable=retryable, next_action=next_action,
        retry_after_ms=retry_after, error_field=field, rule=rule, unmapped=unmapped, schema_valid=schema_valid,
        latency_us=latency, process=process, host=sessions.HOST, source=spec.source, epoch=call.epoch,
        flag_source=call.flag_source, rules_fingerprint=tool[2],
    )
