"""Classifying a model's reply to an error: the identical call, a changed call, a question, giving up, or unclear.

The rules, in order (the first that applies decides):

1. The body is not JSON, has no ``choices`` (or an empty list), or the first choice has no ``message`` object:
   ``unclear`` (malformed).
2. The message carries a ``refusal``, or ``finish_reason`` is ``content_filter``: ``unclear`` (refused).
3. The message calls tools (``tool_calls``, or the older ``function_call``):
   - a call whose arguments are not a JSON object: ``unclear`` (malformed call);
   - any call to the same tool with arguments whose ``shadow.fingerprint`` equals the original's (key order and
     spacing do not matter): ``retry``;
   - otherwise (other arguments, or another tool): ``changed_call``.
4. The text is empty: ``unclear`` (empty).
5. The text is a refusal ("I can't help with that", "I'm sorry, but I cannot assist with this request"):
   ``unclear`` (refused).
6. After dropping closing pleasantries ("Let me know if you need anything else", "Is there anything else I can
   help with?"), a sentence asks the user something: it ends with a question mark, or it requests information or a
   decision ("please provide ...", "could you ...", "let me know which ...", "I need your ..."): ``ask_user``.
7. Any other text ends the turn without asking: ``stop`` (reports the failure or gives up).

Agreement with ``next_action``: ``retry`` wants ``retry``; ``stop`` wants ``stop``; ``ask_user`` ("do not repeat the
call as is; fix the input or ask the user") accepts ``ask_user`` and ``changed_call``, a repair being the first half
of its meaning. The changed call stays its own column in the confusion row, so a reader sees how much of an
``ask_user`` agreement is repairs.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from shadow._fingerprint import fingerprint
from shadow.contract._codes import NextAction


class Action(enum.StrEnum):
    """What the model did after the error, as the classifier reads its reply."""

    RETRY = "retry"
    CHANGED_CALL = "changed_call"
    ASK_USER = "ask_user"
    STOP = "stop"
    UNCLEAR = "unclear"


#: Which reply classes agree with each next_action.
AGREES: Final[Mapping[NextAction, frozenset[Action]]] = {
    NextAction.RETRY: frozenset({Action.RETRY}),
    NextAction.ASK_USER: frozenset({Action.ASK_USER, Action.CHANGED_CALL}),
    NextAction.STOP: frozenset({Action.STOP}),
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """The class of one reply and the rule that decided it."""

    action: Action
    reason: str


def agrees(expected: NextAction, action: Action) -> bool:
    """Whether ``action`` is what ``expected`` asks for."""
    return action in AGREES[expected]


_SENTENCE: Final = re.compile(r"[^.!?\n]+(?:[.!?]+|$)|[.!?]+", re.MULTILINE)
_CLOSING: Final = re.compile(
    r"\b(?:anything else|any other questions|further (?:help|assistance|questions)|other requests"
    r"|happy to help|glad to help|feel free to)\b",
    re.IGNORECASE,
)
_REQUEST: Final = re.compile(
    r"^\W*(?:please|kindly)\b.*\b(?:provide|confirm|tell|share|specify|send|give|clarify|choose|select|pick"
    r"|enter|paste|verify|let me know|sign in|log in|reconnect|connect|re-?authenticate)\b"
    r"|\b(?:could|can|would|will) you\b"
    r"|\blet me know (?:which|what|whether|how|when|where|who|if you(?:'d| would)? (?:like|want|prefer))\b"
    r"|\bi (?:will |would )?need (?:you|your|the|a|an|to know|more)\b"
    r"|\b(?:do|would) you (?:want|like|prefer)\b"
    r"|\bshould i\b",
    re.IGNORECASE,
)
_REFUSAL: Final = re.compile(
    r"^\W*(?:(?:i'?m|i am) sorry,?\s*(?:but\s*)?)?i\s*(?:can(?:'|’)?t|cannot|can not|won(?:'|’)?t|will not"
    r"|am unable to|'m unable to|am not able to)\s+(?:help|assist|comply|do that|continue)"
    r"(?:\s+with\s+(?:that|this)(?:\s+request)?)?\W*$",
    re.IGNORECASE,
)


def classify(body: str, tool: str, arguments: Mapping[str, Any]) -> Verdict:
    """Classify the raw response ``body`` to a turn whose last call was ``tool(arguments)``; never raises."""
    message, finish, problem = _message(body)
    if message is None:
        return Verdict(Action.UNCLEAR, problem)
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip():
        return Verdict(Action.UNCLEAR, "refused: the reply carries a refusal")
    if finish == "content_filter":
        return Verdict(Action.UNCLEAR, "refused: finish_reason content_filter")
    calls = _calls(message)
    if calls:
        return _classify_calls(calls, tool, arguments)
    text = _text(message.get("content"))
    if not text.strip():
        return Verdict(Action.UNCLEAR, "empty: no text and no tool call")
    return classify_text(text)


def classify_text(text: str) -> Verdict:
    """Rules 4 to 7 on a text-only reply: unclear (empty, refused), ask_user or stop."""
    stripped = text.strip()
    if not stripped:
        return Verdict(Action.UNCLEAR, "empty: no text and no tool call")
    if _REFUSAL.match(stripped):
        return Verdict(Action.UNCLEAR, "refused: the text declines the request")
    for sentence in _sentences(_without_code(stripped)):
        if _CLOSING.search(sentence):
            continue
        if sentence.rstrip().endswith("?"):
            return Verdict(Action.ASK_USER, "asks the user a question")
        if _REQUEST.search(sentence):
            return Verdict(Action.ASK_USER, "asks the user for information or a decision")
    return Verdict(Action.STOP, "reports to the user without asking anything")


def _message(body: str) -> tuple[dict[str, Any] | None, object, str]:
    try:
        data = json.loads(body)
    except (ValueError, TypeError, RecursionError):
        return None, None, "malformed: the body is not JSON"
    if not isinstance(data, dict):
        return None, None, "malformed: the body is not a JSON object"
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        if isinstance(data.get("error"), dict | str):
            return None, None, "malformed: the body is an error object, not a completion"
        return None, None, "malformed: no choices"
    first = choices[0]
    if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
        return None, None, "malformed: the first choice has no message"
    return first["message"], first.get("finish_reason"), ""


def _calls(message: Mapping[str, Any]) -> list[Any]:
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        return calls
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        return [{"function": legacy}]
    return []


def _classify_calls(calls: list[Any], tool: str, arguments: Mapping[str, Any]) -> Verdict:
    original = fingerprint(dict(arguments))
    changed: str | None = None
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            return Verdict(Action.UNCLEAR, "malformed: a tool call without a function name")
        parsed = _arguments(function.get("arguments"))
        if parsed is None:
            return Verdict(Action.UNCLEAR, "malformed: tool call arguments are not a JSON object")
        if function["name"] == tool and fingerprint(parsed) == original:
            return Verdict(Action.RETRY, "the identical call again")
        if changed is None:
            changed = "the same tool with changed arguments" if function["name"] == tool else "a call to another tool"
    return Verdict(Action.CHANGED_CALL, changed or "a changed call")


def _arguments(raw: object) -> dict[str, Any] | None:
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if not isinstance(raw, str):
        return None
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _without_code(text: str) -> str:
    return re.sub(r"```.*?```|`[^`]*`", " ", text, flags=re.DOTALL)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]
