"""The published JSON Schema (draft 2020-12) of both payload shapes, and ``validate``."""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING, Any, Final

from shadow import _lazy as preload
from shadow._redact import dumps
from shadow.contract._codes import CODE_TABLE, NextAction
from shadow.contract._payloads import DEFAULT_CONTEXT_CAP, MAX_MESSAGE_CHARS, MAX_SENTENCES, count_sentences

if TYPE_CHECKING:
    import jsonschema

SCHEMA_ID: Final = "https://shadow.dev/schema/tool-result.schema.json"
SCHEMA_FILE: Final = "tool-result.schema.json"


class PayloadError(ValueError):
    """A payload breaks the contract; the message names where and what."""


def build_schema() -> dict[str, Any]:
    """Generate the schema from the code table (the shipped file is this, written out)."""
    codes = [row.code.value for row in CODE_TABLE.values()]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "Tool result",
        "description": "What a tool returns to the model: a success with data, or a structured error.",
        "type": "object",
        "required": ["ok"],
        "properties": {"ok": {"type": "boolean"}},
        "if": {"properties": {"ok": {"const": True}}},
        "then": {"$ref": "#/$defs/success"},
        "else": {"$ref": "#/$defs/failure"},
        "$defs": {
            "success": {
                "type": "object",
                "required": ["ok", "data"],
                "additionalProperties": False,
                "properties": {"ok": {"const": True}, "data": True},
            },
            "failure": {
                "type": "object",
                "required": ["ok", "error"],
                "additionalProperties": False,
                "properties": {"ok": {"const": False}, "error": {"$ref": "#/$defs/error"}},
            },
            "error": {
                "type": "object",
                "required": ["code", "message", "retryable", "next_action", "context"],
                "additionalProperties": False,
                "properties": {
                    "code": {"enum": codes, "description": "One of the documented codes."},
                    "message": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_MESSAGE_CHARS,
                        "pattern": r"\S",
                        "description": f"The remedy, at most {MAX_SENTENCES} sentences.",
                    },
                    "retryable": {"type": "boolean", "description": "True only if the identical call may succeed."},
                    "next_action": {"enum": [a.value for a in NextAction]},
                    "context": {
                        "oneOf": [
                            {"type": "null"},
                            {
                                "type": "object",
                                "properties": {"retry_after_ms": {"type": "integer", "minimum": 0}},
                            },
                        ]
                    },
                },
                "if": {"properties": {"next_action": {"const": "retry"}}, "required": ["next_action"]},
                "then": {"properties": {"retryable": {"const": True}}},
                "else": {"properties": {"retryable": {"const": False}}},
            },
        },
    }


@functools.cache
def schema() -> dict[str, Any]:
    """The schema shipped inside the package."""
    from importlib import resources  # here: ``import shadow`` needs none of it

    text = resources.files("shadow.contract").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    """jsonschema's validator of the schema: jsonschema is imported here, when a payload is first checked (in the
    writer's thread, under the fork guard of ``shadow._lazy``), not by ``import shadow``. Reading the shipped
    schema imports as it goes (``importlib.resources`` and its readers), so under the guard too."""
    preload.load("jsonschema")
    import jsonschema

    return preload.guarded(lambda: jsonschema.Draft202012Validator(schema()))


def validate(payload: object) -> None:
    """Raise ``PayloadError`` naming what is wrong when ``payload`` breaks the contract."""
    if isinstance(payload, dict) and not isinstance(payload.get("ok"), bool):
        if "ok" not in payload:
            raise PayloadError("payload: 'ok' is missing (every payload has ok: true or ok: false)")
        raise PayloadError(f"ok: must be true or false, not {payload['ok']!r}")
    errors = sorted(_validator().iter_errors(payload), key=lambda e: (len(e.absolute_path), e.message))
    if errors:
        from jsonschema.exceptions import best_match

        best = best_match(errors) or errors[0]
        raise PayloadError(f"{_where(best)}: {_explain(best)}")
    _check_rules(payload)


def _check_rules(payload: Any) -> None:
    """What the schema cannot say: the sentence rule and the context's serialised size."""
    if payload["ok"] is False:
        error = payload["error"]
        if count_sentences(error["message"]) > MAX_SENTENCES:
            raise PayloadError(f"error.message: has more than {MAX_SENTENCES} sentences")
        context = error["context"]
        if context and len(dumps(context).encode()) > DEFAULT_CONTEXT_CAP:
            raise PayloadError(f"error.context: larger than {DEFAULT_CONTEXT_CAP} bytes serialised")


_CODES: Final = frozenset(row.code.value for row in CODE_TABLE.values())
_ACTIONS: Final = frozenset(a.value for a in NextAction)
_NON_SPACE: Final = re.compile(r"\S")


def _plainly_valid(payload: object) -> bool:
    """Whether ``payload`` is a plain dict of the schema's shape that the schema accepts: the common case decided
    without the general validator (about 100 times faster). False says nothing: the validator decides then."""
    if type(payload) is not dict or len(payload) != 2:
        return False
    ok = payload.get("ok")
    if ok is True:
        return "data" in payload
    error = payload.get("error")
    if ok is not False or type(error) is not dict or len(error) != 5:
        return False
    code, message, context = error.get("code"), error.get("message"), error.get("context", 0)
    retryable, action = error.get("retryable"), error.get("next_action")
    if type(code) is not str or code not in _CODES or type(action) is not str or action not in _ACTIONS:
        return False
    if type(message) is not str or len(message) > MAX_MESSAGE_CHARS or _NON_SPACE.search(message) is None:
        return False
    if type(retryable) is not bool or retryable is not (action == "retry"):
        return False
    if context is None:
        return True
    if type(context) is not dict:
        return False
    wait = context.get("retry_after_ms", 0)
    return type(wait) is int and wait >= 0


def is_valid(payload: object) -> bool:
    """Whether ``payload`` meets the contract (the fast path: no error message is built; a plain payload of the
    common shape is checked without the general validator, which decides everything else)."""
    if not _plainly_valid(payload) and not _validator().is_valid(payload):
        return False
    try:
        _check_rules(payload)
    except PayloadError:
        return False
    return True


def _where(error: jsonschema.ValidationError) -> str:
    path = ".".join(str(p) for p in error.absolute_path)
    return path or "payload"


def _explain(error: jsonschema.ValidationError) -> str:
    if error.validator == "const" and list(error.absolute_path)[-1:] == ["retryable"]:
        return "retryable must be true exactly when next_action is 'retry'"
    if error.validator == "enum" and list(error.absolute_path)[-1:] == ["code"]:
        return f"{error.instance!r} is not a documented code"
    if error.validator == "required":
        return error.message.replace("is a required property", "is missing (all keys are required)")
    return error.message


def schema_text() -> str:
    """The schema as pretty JSON, as ``shadow schema`` prints it."""
    return json.dumps(schema(), indent=2) + "\n"
