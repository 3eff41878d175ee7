"""A simulated agent fleet for ``shadow demo``: agents that react to what they are served. Simulated, not real."""

from __future__ import annotations

import datetime as dt
import functools
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shadow import _clock as clock
from shadow._decorator import tool as shadow_tool
from shadow._sessions import mark, session
from shadow.calllog._writer import flush
from shadow.contract._rules import looks_like_error
from shadow.demo._tools import RULES, TOOLS, World
from shadow.flags._db import DbFlags

DAY_NS = 86_400 * 10**9
SOURCE = "simulated"  # the records' ``source``: nobody can mistake them for real traffic
GOOD_ARGS: dict[str, dict[str, Any]] = {
    "create_task": {"title": "Write the release notes", "due_date": "2026-12-14"},
    "search_docs": {"query": "refund policy", "limit": 5},
    "get_weather": {"city": "Lisbon"},
    "lookup_user": {"username": "ana"},
    "send_email": {"to": "ana@example.com", "body": "The report is ready."},
}
BAD_ARGS: dict[str, list[dict[str, Any]]] = {
    "create_task": [{"due_date": "next friday"}, {"title": ""}, {"due_date": "14/12/2026"}],
    "search_docs": [{"limit": 100}],
    "get_weather": [{"city": "Atlantis"}],
    "lookup_user": [{"username": "anna"}, {"username": "bob"}],
    "send_email": [{"to": "ana at example"}],
}


@dataclass(frozen=True, slots=True)
class Behaviour:
    """How a simulated agent reacts to an error: chances of a blind repeat, a repair, asking, moving on."""

    repeat: float
    repair: float
    ask: float


#: Served a legacy error, the agent guesses: it often repeats the identical call.
LEGACY_BEHAVIOUR = Behaviour(repeat=0.45, repair=0.25, ask=0.15)
#: Served a structured error, it mostly follows next_action.
STRUCTURED_BEHAVIOUR = {
    "ask_user": Behaviour(repeat=0.05, repair=0.55, ask=0.35),
    "stop": Behaviour(repeat=0.04, repair=0.0, ask=0.3),
}


@dataclass(frozen=True, slots=True)
class Phase:
    """From ``day`` on, ``tools`` are in ``mode`` (at ``percent``)."""

    day: int
    tools: tuple[str, ...]
    mode: str
    percent: int = 100
    reason: str = ""


PLAN: tuple[Phase, ...] = (
    Phase(0, tuple(TOOLS), "shadow", reason="demo: shadow every tool"),
    Phase(7, ("create_task", "search_docs", "get_weather", "lookup_user"), "cutover", 50,
          reason="demo: ready tools to 50% (randomised by session)"),
)
DAYS = 14


@dataclass(frozen=True, slots=True)
class FleetResult:
    """What the simulation did."""

    sessions: int
    calls: int
    start: dt.datetime
    end: dt.datetime


class SimClock:
    """Simulated wall time in nanoseconds; advanced by the simulation, read by the records."""

    def __init__(self, start_ns: int) -> None:
        self.ns = start_ns

    def __call__(self) -> int:
        return self.ns

    def advance(self, seconds: float) -> None:
        self.ns += int(seconds * 1e9)


class Agent:
    """One simulated agent working through one task, reacting to what each tool served it."""

    def __init__(self, tools: dict[str, Callable[..., Any]], rng: random.Random, sim: SimClock) -> None:
        self.tools, self.rng, self.sim = tools, rng, sim
        self.calls = 0

    def call(self, name: str, args: dict[str, Any]) -> tuple[bool, Any]:
        self.sim.advance(self.rng.uniform(2, 20))
        self.calls += 1
        try:
            result = self.tools[name](**args)
        except Exception as exc:  # the agent framework shows legacy exceptions to the model as text
            return True, f"Error: {type(exc).__name__}"
        if isinstance(result, dict) and result.get("ok") is False and "error" in result:
            return True, result
        return looks_like_error(result), result

    def run(self, steps: int) -> None:
        names = list(self.tools)
        for _ in range(steps):
            name = self.rng.choice(names)
            args = dict(GOOD_ARGS[name])
            if self.rng.random() < 0.18:
                args.update(self.rng.choice(BAD_ARGS[name]))
            if not self.attempt(name, args):
                break
        mark("end", source=SOURCE)

    def attempt(self, name: str, args: dict[str, Any]) -> bool:
        """Call until it works or the agent gives up; False when the agent ends the task."""
        for _ in range(6):
            failed, served = self.call(name, args)
            if not failed:
                return True
            structured = isinstance(served, dict) and "error" in served and isinstance(served["error"], dict)
            if structured and served["error"]["next_action"] == "retry":
                wait = (served["error"].get("context") or {}).get("retry_after_ms") or 1000
                self.sim.advance(wait / 1000)
                continue
            behaviour = STRUCTURED_BEHAVIOUR[served["error"]["next_action"]] if structured else LEGACY_BEHAVIOUR
            roll = self.rng.random()
            if roll < behaviour.repeat:
                continue
            if roll < behaviour.repeat + behaviour.repair:
                args = {**args, **{k: v for k, v in GOOD_ARGS[name].items() if args.get(k) != v}}
                continue
            if roll < behaviour.repeat + behaviour.repair + behaviour.ask:
                mark("user_turn", source=SOURCE)
                self.sim.advance(self.rng.uniform(20, 120))
                args = dict(GOOD_ARGS[name])
                continue
            return not structured or served["error"]["next_action"] != "stop"
        return True


def run_fleet(url: str, *, sessions: int, seed: int, progress: Callable[[int], None] | None = None) -> FleetResult:
    """Drive ``sessions`` simulated agent tasks over 14 simulated days through the shadow phase and the cutover."""
    rng = random.Random(seed)
    world = World(rng=random.Random(seed + 1))
    store = DbFlags(url, ttl=3600.0)
    start = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0) - dt.timedelta(days=DAYS)
    sim = SimClock(int(start.timestamp() * 1e9))
    tools: dict[str, Callable[..., Any]] = {
        name: shadow_tool(name=name, rules=RULES, idempotent=name != "send_email", flags=store, source=SOURCE)(
            functools.partial(fn, world)
        )
        for name, fn in TOOLS.items()
    }
    per_day = [sessions // DAYS + (1 if day < sessions % DAYS else 0) for day in range(DAYS)]
    done = calls = 0
    with clock.using(sim):
        for day in range(DAYS):
            sim.ns = int(start.timestamp() * 1e9) + day * DAY_NS + 8 * 3600 * 10**9
            for phase in PLAN:
                if phase.day == day:
                    for name in phase.tools:
                        store.set(name, phase.mode, phase.percent, actor="shadow demo", reason=phase.reason)
            for _ in range(per_day[day]):
                agent = Agent(tools, rng, sim)
                with session(f"demo-{seed}-{done:05d}"):
                    agent.run(rng.randint(4, 12))
                calls += agent.calls
                done += 1
                if progress is not None:
                    progress(1)
        end = clock.now()
    flush(60)
    return FleetResult(done, calls, start, end)
