"""The cutover gate: is a tool's shadow log good enough to serve the structured payload to the model?"""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Connection, Engine, case, func, inspect, select

from shadow import _clock as clock
from shadow._config import sqlite_path
from shadow.analytics._evidence import served_leaks
from shadow.analytics._retranslate import merged, retranslate
from shadow.analytics._text import counted
from shadow.analytics._thresholds import Thresholds
from shadow.calllog import _db as db
from shadow.calllog._tables import calls
from shadow.contract._codes import CODE_TABLE, DOWNGRADED_WHEN_NOT_IDEMPOTENT, Code
from shadow.contract._rules import Rules

#: How many leak findings a result keeps (the count covers all of them).
MAX_LEAKS_SHOWN: Final = 20
_LEAK_TEXT: Final = 120

InventorySource = str | os.PathLike[str] | Mapping[str, Any]


class StoreMissing(LookupError):
    """There is no call log at the URL; the message says how to create one."""


@dataclass(frozen=True, slots=True)
class Check:
    """One gate condition: what was measured, the limit, and what to do when it fails."""

    name: str
    passed: bool
    value: int | float
    limit: str
    advice: str


@dataclass(frozen=True, slots=True)
class Leak:
    """A structured error payload in the log that holds traceback text, a path or ``site-packages``."""

    call_id: str
    code: str | None
    found: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Readiness:
    """The gate's verdict for one tool, with every number it rests on."""

    tool: str
    ready: bool
    calls: int
    errors: int
    unmapped: int
    unmapped_share: float
    schema_invalid: int
    leak_count: int
    leaks: tuple[Leak, ...]
    codes_seen: dict[str, int]
    proposed: tuple[str, ...] | None  # None: no inventory was given
    proposed_seen: tuple[str, ...]
    proposed_unseen: tuple[str, ...]
    not_proposed: tuple[str, ...]
    checks: tuple[Check, ...]
    thresholds: Thresholds
    first_call: dt.datetime | None = None
    last_call: dt.datetime | None = None
    other_tools: tuple[str, ...] = field(default=())  # filled in when the tool has no calls at all
    rules: str = "as logged"  # which rules classified the errors: as logged, or the ones given (re-translated)
    no_longer_errors: int = 0  # logged errors today's rules read as successes

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why the tool is not ready, one sentence with its remedy per failed check (empty when ready)."""
        return tuple(f"{c.advice}" for c in self.checks if not c.passed)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (the shape of ``shadow ready --format json``)."""
        data = asdict(self)
        data["reasons"] = list(self.reasons)
        for key in ("first_call", "last_call"):
            value = getattr(self, key)
            data[key] = value.isoformat() if value is not None else None
        return data

    def explain(self) -> str:
        """A short text for a person: the verdict, then each reason (what ``shadow flags set`` can print)."""
        head = f"{self.tool} is {'ready' if self.ready else 'not ready'} for cutover"
        head += f" ({counted(self.calls, 'call')}, {counted(self.errors, 'error')}, {self.unmapped_share:.1%} unmapped"
        head += ", classified by the rules in force when each call was logged)" if self.rules == "as logged" else (
            f", every logged error translated again with {self.rules})")
        return "\n".join([head, *(f"- {reason}" for reason in self.reasons)])


def _engine(url: str) -> Engine:
    path = sqlite_path(db.normalise_url(url))
    if path is not None and not path.exists():
        raise StoreMissing(f"there is no call log at {path}; run `shadow db upgrade` and shadow the tool first")
    engine = db.engine(url)
    if not inspect(engine).has_table(calls.name):
        raise StoreMissing(f"the database at {db.normalise_url(url).split('@')[-1]} has no call log; "
                           "run `shadow db upgrade` and shadow the tool first")
    return engine


#: The largest inventory file ``shadow ready --inventory`` reads (one of a large tool layer is a few MiB).
MAX_INVENTORY_BYTES: Final = 64 * 1024 * 1024


def _read_bounded(path: Path) -> bytes:
    """An inventory file's bytes; ``ValueError`` for a device, a FIFO or a file over ``MAX_INVENTORY_BYTES``."""
    if not stat.S_ISREG(path.stat().st_mode):  # before opening: a FIFO would block the open itself
        raise ValueError("not a regular file")
    with path.open("rb") as source:
        data = source.read(MAX_INVENTORY_BYTES + 1)
    if len(data) > MAX_INVENTORY_BYTES:
        raise ValueError(f"over {MAX_INVENTORY_BYTES} bytes")
    return data


def load_proposed(source: InventorySource, tool: str) -> tuple[str, ...]:
    """The codes an inventory (a ``shadow inventory --format json`` file or its data) proposes for ``tool``."""
    if isinstance(source, Mapping):
        data: object = source
    else:
        path = Path(source)
        try:
            data = json.loads(_read_bounded(path))
        except FileNotFoundError:
            raise ValueError(f"inventory file {path} does not exist; write one with "
                             f"`shadow inventory SRC --format json > {path.name}`") from None
        except (OSError, ValueError) as exc:
            raise ValueError(f"inventory file {path} is not readable JSON ({exc}); write it with "
                             "`shadow inventory SRC --format json`") from None
    sites = data.get("sites") if isinstance(data, Mapping) else None
    if not isinstance(sites, list):
        raise ValueError("the inventory has no 'sites' list; write it with `shadow inventory SRC --format json`")
    found = {s.get("code") for s in sites if isinstance(s, Mapping) and s.get("tool") == tool}
    return tuple(c.value for c in CODE_TABLE if c.value in found)


def _order(codes: set[str]) -> tuple[str, ...]:
    known = [c.value for c in CODE_TABLE if c.value in codes]
    return (*known, *sorted(codes - set(known)))


def readiness(
    url: str,
    tool: str,
    thresholds: Thresholds | None = None,
    *,
    inventory: InventorySource | None = None,
    since: dt.datetime | None = None,
    rules: Rules | None = None,
    rules_name: str = "the given rules",
) -> Readiness:
    """Read the call log at ``url`` and decide whether ``tool`` may be cut over.

    Counts every logged call of the tool (shadow and cutover) since ``since``; leaks are looked for in the
    structured error payloads only (success data may hold paths legitimately). With ``rules``, every logged
    error's legacy outcome (the returned value, or the exception's type and scrubbed message) is translated again
    with them, once per distinct outcome, so a rules fix is judged on the traffic already logged; calls logged as
    successes are not read again.
    """
    limits = thresholds or Thresholds()
    proposed = load_proposed(inventory, tool) if inventory is not None else None
    engine = _engine(url)
    where = [calls.c.tool == tool]
    if since is not None:
        where.append(calls.c.ts >= since)
    is_error = calls.c.outcome == "error"
    totals = select(
        func.count(),
        func.coalesce(func.sum(case((is_error, 1), else_=0)), 0),
        func.coalesce(func.sum(case((is_error & calls.c.unmapped.is_(True), 1), else_=0)), 0),
        func.coalesce(func.sum(case((calls.c.schema_valid.is_(False), 1), else_=0)), 0),
        func.min(calls.c.ts),
        func.max(calls.c.ts),
    ).where(*where)
    by_code = (select(calls.c.code, calls.c.unmapped, func.count()).where(*where, is_error)
               .group_by(calls.c.code, calls.c.unmapped))
    error_payloads = select(calls.c.id, calls.c.code, calls.c.new_payload, calls.c.legacy_payload).where(
        *where, is_error)
    leaks: list[Leak] = []
    leak_count = 0
    with engine.connect() as conn:
        n_calls, n_errors, n_unmapped, n_invalid, first, last = conn.execute(totals).one()
        seen: dict[str, int] = {}
        unmapped_by_code: dict[str, int] = {}  # what the unmapped errors were served, as logged
        for code, unmapped, n in conn.execute(by_code):
            if code is not None:
                seen[str(code)] = seen.get(str(code), 0) + int(n)
            if unmapped:
                key = str(code) if code is not None else "no code"
                unmapped_by_code[key] = unmapped_by_code.get(key, 0) + int(n)
        for call_id, code, payload, legacy in conn.execution_options(yield_per=1000).execute(error_payloads):
            found = served_leaks(payload, legacy)
            if found:
                leak_count += 1
                if len(leaks) < MAX_LEAKS_SHOWN:
                    leaks.append(Leak(str(call_id), code, tuple(text[:_LEAK_TEXT] for text in found)))
        others = _tool_names(conn) if not n_calls else ()
        again = retranslate(_distinct_outcomes(conn, where, is_error), rules) if rules is not None else None
        newest = _newest_rules(conn, where) if rules is None else None
        served = (", ".join(f"{code} ({n:,})" for code, n in sorted(unmapped_by_code.items(),
                                                                   key=lambda item: (-item[1], item[0])))
                  if rules is None and unmapped_by_code else None)
    n_calls, n_errors, n_unmapped, n_invalid = int(n_calls), int(n_errors), int(n_unmapped), int(n_invalid)
    if again is not None:
        n_errors, n_unmapped, seen = again.errors, again.unmapped, again.codes
    share = n_unmapped / n_errors if n_errors else 0.0
    proposed_seen = tuple(c for c in proposed or () if c in seen)
    proposed_unseen = tuple(c for c in proposed or () if c not in seen)
    not_proposed = _order(set(seen) - set(proposed)) if proposed is not None else ()
    checks = [
        *count_checks(n_calls, n_errors, n_unmapped, n_invalid, limits,
                      no_calls=_no_calls(tool, others) if not n_calls else None, served=served),
        Check("leaks", leak_count <= limits.max_leaks, leak_count, f"<= {limits.max_leaks}",
              f"{leak_count} error payloads hold traceback text or file paths the model never read in legacy; "
              "move that text out of rule messages and contexts"),
    ]
    if newest is not None:  # judged as logged, across rules versions: say how to judge today's rules alone
        checks = [replace(c, advice=f"{c.advice}; {newest}")
                  if c.name == "unmapped_share" and not c.passed else c for c in checks]
    if proposed is not None:
        checks.append(Check(
            "proposed_seen", not limits.require_proposed or not proposed_unseen, len(proposed_seen),
            f"all {len(proposed)}" if limits.require_proposed else "informational",
            f"proposed codes never seen in traffic: {', '.join(proposed_unseen)}; drive those error paths "
            "in shadow mode, or drop --require-proposed",
        ))
    return Readiness(
        tool=tool, ready=all(c.passed for c in checks), calls=n_calls, errors=n_errors, unmapped=n_unmapped,
        unmapped_share=share, schema_invalid=n_invalid, leak_count=leak_count, leaks=tuple(leaks),
        codes_seen={code: seen[code] for code in _order(set(seen))}, proposed=proposed,
        proposed_seen=proposed_seen, proposed_unseen=proposed_unseen, not_proposed=not_proposed,
        checks=tuple(checks), thresholds=limits, first_call=_utc(first), last_call=_utc(last), other_tools=others,
        rules=rules_name if again is not None else "as logged",
        no_longer_errors=again.no_longer_errors if again is not None else 0,
    )


def _newest_rules(conn: Connection, where: list[Any]) -> str | None:
    """When the tool's errors were translated by more than one set of rules: how to judge the newest alone (its
    first call as ``--since``) or all with today's (``--rules``); else ``None``."""
    query = (select(calls.c.rules_fingerprint, func.min(calls.c.ts), func.max(calls.c.ts))
             .where(*where, calls.c.outcome == "error", calls.c.rules_fingerprint.is_not(None))
             .group_by(calls.c.rules_fingerprint))
    versions = conn.execute(query).all()
    if len(versions) < 2:
        return None
    _, first, _ = max(versions, key=lambda row: row[2])
    since = _utc(first)
    when = since.isoformat(timespec="seconds") if since is not None else "its first call"
    return (f"these errors were translated by {len(versions)} versions of the rules: judge them all with today's "
            f"rules (--rules MODULE or SHADOW_RULES), or see the newest version's calls alone with "
            f"`shadow ready TOOL --since {when}`")


def _distinct_outcomes(conn: Connection, where: list[Any], is_error: Any) -> list[tuple[Any, int]]:
    """Each distinct legacy outcome of the tool's logged errors, with how many rows hold it."""
    query = select(calls.c.legacy_payload).where(*where, is_error)
    return merged((payload, 1) for payload, in conn.execution_options(yield_per=1000).execute(query))


def count_checks(
    n_calls: int, n_errors: int, n_unmapped: int, n_invalid: int, limits: Thresholds, *, no_calls: str | None = None,
    served: str | None = None,
) -> list[Check]:
    """The gate's checks that need only counts (calls, errors, unmapped share, schema-invalid payloads).

    ``readiness`` adds the leak scan and what the unmapped errors were served (``served``); the dashboard uses
    these alone on the report's per-tool counts.
    """
    share = n_unmapped / n_errors if n_errors else 0.0
    return [
        Check("calls", n_calls >= limits.min_calls, n_calls, f">= {limits.min_calls}",
              no_calls or f"only {n_calls} calls are logged; keep shadowing until at least {limits.min_calls} are"),
        Check("errors", n_errors >= limits.min_errors, n_errors, f">= {limits.min_errors}",
              f"only {n_errors} errors are logged; keep shadowing until at least {limits.min_errors} are, "
              "so every error path has been translated for real"),
        Check("unmapped_share", share <= limits.max_unmapped_share, round(share, 6),
              f"<= {limits.max_unmapped_share:g}",
              f"{n_unmapped} of {n_errors} errors ({share:.1%}) are unmapped: no rule placed them (they were served "
              f"{served or 'rejected, internal_error or the built-in phrase table guess'}); "
              f"add rules for them (start from shadow inventory) until at most {limits.max_unmapped_share:.0%}"),
        Check("schema_invalid", n_invalid <= limits.max_schema_invalid, n_invalid, f"<= {limits.max_schema_invalid}",
              f"{n_invalid} structured payloads failed the schema; fix the rules' messages and contexts "
              "(check them with shadow.validate)"),
    ]


def _no_calls(tool: str, others: tuple[str, ...]) -> str:
    hint = f" (tools in the log: {', '.join(others)})" if others else " (the log has no calls yet)"
    return f"no calls of {tool!r} are logged{hint}; wrap it with @shadow.tool and set its flag to shadow"


def _utc(value: object) -> dt.datetime | None:
    return clock.utc(value) if isinstance(value, dt.datetime) else None


def _tool_names(conn: Connection, limit: int = 20) -> tuple[str, ...]:
    names = select(calls.c.tool).distinct().order_by(calls.c.tool).limit(limit)
    return tuple(str(name) for name, in conn.execute(names))


def tool_in_log(url: str, tool: str) -> tuple[bool, tuple[str, ...]]:
    """Whether the call log at ``url`` holds calls of ``tool``, and (when not) up to 20 tools it does hold.

    Raises ``StoreMissing`` when there is no call log at ``url`` (nothing is created).
    """
    with _engine(url).connect() as conn:
        if conn.execute(select(calls.c.id).where(calls.c.tool == tool).limit(1)).first() is not None:
            return True, ()
        return False, _tool_names(conn)


def logged_idempotent(url: str, tool: str) -> bool:
    """Whether ``tool``'s logged errors read as an idempotent tool's: ``False`` once a service failure was served
    ``ask_user`` (a tool wrapped with ``idempotent=False`` downgrades them), else ``True``."""
    downgraded = [c.value for c in DOWNGRADED_WHEN_NOT_IDEMPOTENT]
    with _engine(url).connect() as conn:
        query = select(calls.c.id).where(calls.c.tool == tool, calls.c.code.in_(downgraded),
                                         calls.c.next_action == "ask_user").limit(1)
        return conn.execute(query).first() is None


def codes_for_tool(url: str, tool: str, inventory: InventorySource | None = None) -> list[Code]:
    """The codes ``tool`` can return: those seen in its logged errors, those an inventory proposes, and
    ``internal_error`` (the catch-all every wrapped tool can return). In code-table order, for
    ``shadow.describe(codes_for_tool(...))``.
    """
    with _engine(url).connect() as conn:
        query = select(calls.c.code).distinct().where(calls.c.tool == tool, calls.c.outcome == "error")
        found = {str(code) for code, in conn.execute(query) if code is not None}
    found.add(Code.INTERNAL_ERROR.value)
    if inventory is not None:
        found.update(load_proposed(inventory, tool))
    return [c for c in CODE_TABLE if c.value in found]
