"""The demo's legacy tools, each with today's ad hoc error style, and the rules a team would write for them."""

from __future__ import annotations

import random
import re
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shadow.contract._rules import Rules

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class WeatherServiceDown(Exception):
    """The weather upstream is unreachable (an exception of the tool layer's own)."""


@dataclass
class World:
    """The state behind the demo tools: which ids exist, and how flaky the upstreams are today."""

    rng: random.Random
    users: frozenset[str] = frozenset({"ana", "bo", "chen", "dara"})
    flaky: float = 0.08


def _io(world: World) -> None:
    """Stand in for the network round trip a real tool makes (0.2 to 1 ms), so latencies are not zero."""
    time.sleep(world.rng.uniform(0.0002, 0.001))


def create_task(world: World, title: str, due_date: str) -> dict[str, Any]:
    """Legacy style: an error dict with no hint of what was wrong."""
    _io(world)
    if not title.strip():
        return {"error": "Bad request"}
    if not _DATE.match(due_date):
        return {"error": "Bad request: invalid due_date"}
    return {"id": f"t-{world.rng.randrange(10_000)}", "title": title, "due_date": due_date}


def search_docs(world: World, query: str, limit: int = 5) -> list[str] | str:
    """Legacy style: a bare error string, and a raw exception from the upstream."""
    _io(world)
    if world.rng.random() < world.flaky:
        raise TimeoutError("search backend did not answer in 2000 ms (host=search-7.internal)")
    if limit > 50:
        return "Error: limit too large"
    return [f"doc-{zlib.crc32(f'{query}:{i}'.encode()) % 1000}" for i in range(limit)]


def get_weather(world: World, city: str) -> dict[str, Any]:
    """Legacy style: HTTP-ish statuses in the body, and an exception of its own that no built-in rule knows."""
    _io(world)
    if world.rng.random() < world.flaky / 2:
        raise WeatherServiceDown("weather api returned 502 from http://10.0.0.12:8080/v1?key=abc")
    if city.lower() in {"atlantis", "gotham"}:
        return {"status": 404, "message": "city not found"}
    return {"status": 200, "city": city, "temp_c": world.rng.randint(-5, 30)}


def lookup_user(world: World, username: str) -> dict[str, Any] | str:
    """Legacy style: a string starting with 'Error'."""
    _io(world)
    if username not in world.users:
        return f"Error: no such user '{username}'"
    return {"username": username, "email": f"{username}@example.com"}


def send_email(world: World, to: str, body: str) -> str:
    """Legacy style: raw exceptions; not idempotent (a blind retry could send twice)."""
    _io(world)
    if "@" not in to:
        raise ValueError(f"bad address {to}")
    if world.rng.random() < world.flaky:
        raise ConnectionError("smtp relay refused connection")
    return "sent"


TOOLS: dict[str, Callable[..., Any]] = {
    "create_task": create_task,
    "search_docs": search_docs,
    "get_weather": get_weather,
    "lookup_user": lookup_user,
    "send_email": send_email,
}

#: What ``shadow inventory --emit-rules`` would propose, tidied by a person; send_email's ValueError is left
#: unmapped on purpose, so the dashboard shows a tool that is not ready to cut over.
RULES = (
    Rules()
    .on(WeatherServiceDown, "upstream_unavailable",
        "The weather service is unavailable right now. Make the identical call again shortly.")
    .on_result(r"invalid due_date", "validation_error",
               "The field 'due_date' must be an ISO 8601 date, for example 2025-03-14.",
               context=lambda v: {"field": "due_date"})
    .on_result(r"^Bad request$", "validation_error",
               "The field 'title' must not be empty. Give the task a short title, for example 'Ship v2'.",
               context=lambda v: {"field": "title"})
    .on_result(r"limit too large", "validation_error",
               "The field 'limit' must be at most 50. Ask for fewer results, for example limit=10.",
               context=lambda v: {"field": "limit", "maximum": 50})
    .on_result(r"no such user", "not_found",
               "No user has that username. Ask the user for the exact username, for example 'ana'.",
               context=lambda v: {"field": "username"})
    .on_result(r"city not found", "not_found",
               "No city has that name. Ask the user for a real city name, for example 'Lisbon'.",
               context=lambda v: {"field": "city"})
) + Rules.default()
