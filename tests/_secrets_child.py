"""Run by tests/test_secrets_everywhere.py in a fresh process: real tools called with every planted credential.

Each corpus text goes into an argument value, a mapping key, a nested structure, an exception's text, a rule's
context, a legacy result (in shadow mode and as an error value), a tool's name and a session id. Prints the
payloads served in cutover that are errors, one JSON document (a success's data is the tool's own, served as is).
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import shadow
from shadow import Code, Rules
from tests._secrets_corpus import CORPUS, ECHOED, KEY_NAMES, RULES

TEXTS = [text for _n, _p, text, _s in CORPUS] + [entry["text"] for entry in RULES]


@shadow.tool
def note(text: str) -> str:
    return "noted"


@shadow.tool
def legacy_value(text: str) -> dict[str, str]:
    return {"error": text}


@shadow.tool
def legacy_raise(text: str) -> str:
    raise RuntimeError(text)


@shadow.guard
def guarded_raise(text: str) -> str:
    raise RuntimeError(text)


@shadow.tool
def keyed(data: dict[str, Any]) -> dict[str, Any]:
    return {"error": dict.fromkeys(data, "seen")}


@shadow.tool
def nested(config: dict[str, Any]) -> dict[str, Any]:
    return {"status": "failed", "detail": [[config["a"][0]["b"]]]}


@shadow.tool
def shadow_result(text: str) -> dict[str, Any]:  # SHADOW_FLAGS puts this one in shadow mode
    return {"rows": [{"value": text}], "note": text}


@shadow.tool
def store_kv(**kwargs: object) -> str:
    return "stored"


_RULES = Rules.default().on(LookupError, Code.NOT_FOUND, "No task has the id {id}. List tasks to find it.",
                            context=lambda e: {"id": e.args[0]})


@shadow.tool(rules=_RULES)
def get_task(task_id: str) -> str:
    raise LookupError(task_id)


def login(user: str, password: str, note: str) -> str:  # echoes a credential-keyed argument
    raise ValueError(f"bad login for {user} with {password}: {note}")


@shadow.tool
def connect(config: dict[str, Any]) -> dict[str, Any]:
    return {"echo": "connected with " + config["auth"]["token"]}


def _named(text: str) -> Any:
    def fn(x: int) -> dict[str, str]:
        return {"error": "named tool failed"}

    return shadow.tool(text)(fn)


def main() -> None:
    served: list[Any] = []

    def keep(value: Any) -> None:
        if not (isinstance(value, dict) and value.get("ok") is True):  # errors only: a success's data is the tool's
            served.append(value)

    for text in TEXTS:
        for value in (note(text=text), legacy_value(text=text), legacy_raise(text=text), guarded_raise(text=text),
                      get_task(task_id=text), keyed({text: 1, "plain": 2}), nested({"a": [{"b": {"c": text}}]})):
            keep(value)
        shadow_result(text=text)
        if len(text) <= 200 and "\x00" not in text:
            keep(_named(text)(1))
            with shadow.session(text):
                keep(note(text="in a session"))
    for key in KEY_NAMES:
        keep(store_kv(**{key: "KeyVal-" + key + "-Zq81"}))
    login_cutover = shadow.tool("login")(login)
    login_shadow = shadow.tool("login_shadow")(login)
    for i in range(3):
        keep(login_cutover("bad", password=ECHOED[0], note=f"n{i}"))
        served.append(connect({"auth": {"token": ECHOED[1]}}))  # a success, echoing a credential-keyed argument
        keep(shadow.guard(login)("bad", ECHOED[0], f"g{i}"))
        with contextlib.suppress(ValueError):
            login_shadow("bad", ECHOED[0], f"n{i}")
    assert shadow.flush(120)
    print(json.dumps(served))


if __name__ == "__main__":
    main()
