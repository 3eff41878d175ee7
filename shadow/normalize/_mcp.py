"""MCP error texts and JSON-RPC errors as ``shadow.Rules``, and how a tool's text result reads to the rules."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from shadow.contract._author import fit_message
from shadow.contract._codes import Code
from shadow.contract._payloads import MAX_MESSAGE_CHARS, MAX_SENTENCES, count_sentences
from shadow.contract._rules import ExceptionRule, ResultRule, Rules, error_text, looks_like_error

#: The prefix the MCP Python SDK puts before a tool's error text.
MCP_PREFIX: Final = re.compile(r"^\s*Error executing tool (?P<tool>[^\s:]+)(?::\s*(?P<rest>.*))?$", re.DOTALL)
_VALIDATION = re.compile(r"^\s*\d+ validation errors? for \S+\s*\n(?P<field>[^\n]+)\n\s*(?P<problem>[^\[\n]+)")
_INPUT_VALIDATION = re.compile(r"^\s*Input validation error:\s*(?P<problem>.+)", re.DOTALL)
_REQUIRED_PROPERTY = re.compile(r"'(?P<field>[^']+)' is a required property")
_ZOD_PATH = re.compile(r'"path":\s*\[\s*"(?P<field>[^"]+)"')
_ZOD_MESSAGE = re.compile(r'"message":\s*"(?P<problem>[^"]+)"')
#: The TypeScript SDK's zod issues as text, one per line: ``Invalid arguments for tool X: Required at
#: entities[0].entityType`` (``Expected array, received string at entities``, ``Invalid input: ... at a``).
_ZOD_ISSUES = re.compile(r"Invalid arguments for tool [^:\n]+:\s*(?P<issues>[^\[{\s].*)", re.DOTALL)
_ZOD_ISSUE = re.compile(r"^(?P<problem>[^\n]+?) at (?P<field>[^\s]+)[ \t]*$", re.MULTILINE)
_MISSING_ARGUMENT = re.compile(r"missing required argument:?\s*'?(?P<field>[\w.-]+)", re.IGNORECASE)
#: "Unknown tool: X" (the Python SDK, also after "Error: "), "Tool X not found" (the TypeScript SDK, also after its
#: "MCP error -32602: " prefix).
_UNKNOWN_TOOL = re.compile(r"^\s*(?:MCP error -?\d+:\s*)?(?:error:\s*)?(?:Unknown tool:?\s*'?(?P<tool>[^\s']+)|"
                           r"Tool '?(?P<named>[^\s']+)'? not found\s*$)", re.IGNORECASE)
#: The TypeScript SDK's prefix on an error it turns into text: ``MCP error -32602: ...``.
_TS_PREFIX = re.compile(r"^\s*MCP error (?P<rpc>-?\d+):\s*(?P<rest>.*)$", re.DOTALL)

JSONRPC_CODES: Final[dict[int, Code]] = {
    -32001: Code.UPSTREAM_TIMEOUT,  # REQUEST_TIMEOUT (the SDK's own request timeout)
    -32000: Code.UPSTREAM_UNAVAILABLE,  # CONNECTION_CLOSED
    -32602: Code.VALIDATION_ERROR,  # INVALID_PARAMS (an unknown tool name is not_found, by its text)
    -32601: Code.NOT_IMPLEMENTED,  # METHOD_NOT_FOUND
    -32800: Code.CANCELLED,  # REQUEST_CANCELLED
}


def mcp_error_value(text: str) -> dict[str, Any]:
    """A tool error text as the value result rules read: the SDK's ``Error executing tool NAME:`` prefix removed
    (so a tool's name never decides its code), always error-shaped (``{"ok": False, "error": ...}``)."""
    found = MCP_PREFIX.match(text)
    if found is not None and found.group("rest"):
        return {"ok": False, "error": found.group("rest").strip(), "tool": found.group("tool")}
    typescript = _TS_PREFIX.match(text)
    if typescript is not None and typescript.group("rest"):
        return {"ok": False, "error": typescript.group("rest").strip(), "jsonrpc_code": int(typescript.group("rpc"))}
    return {"ok": False, "error": text}


def tool_text_value(text: str, *, is_error: bool | None = None) -> object:
    """What a tool's text result means to the result rules: parsed JSON when it is JSON, else the text; an
    explicit error flag (``is_error=True``) or the MCP error prefix makes it error-shaped."""
    parsed: object = text
    stripped = text.strip()
    if stripped[:1] in ("{", "[", '"') or stripped in ("true", "false", "null"):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            parsed = text
    if is_error:
        if isinstance(parsed, Mapping) and looks_like_error(parsed):
            return dict(parsed)
        return mcp_error_value(text)
    if isinstance(parsed, str) and MCP_PREFIX.match(parsed):
        return mcp_error_value(parsed)
    return parsed


def wraps_text(structured: object, text: str) -> bool:
    """Whether ``structured`` is only the text content wrapped as ``{"result": text}``: what FastMCP (either SDK)
    sends for a tool annotated ``-> str``, whose text, an error included ("Error: node Call not allowed"), is read
    as any returned text is."""
    return (isinstance(structured, Mapping) and len(structured) == 1 and isinstance(structured.get("result"), str)
            and structured["result"] == text)


#: The keys of an MCP tool result as ``shadow proxy`` logs it (``CallToolResult`` dumped by alias).
_DUMP_KEYS: Final = frozenset({"content", "isError", "structuredContent", "_meta", "resultType"})


def is_logged_result(payload: object) -> bool:
    """Whether ``payload`` is a tool result as ``shadow proxy`` logs it (its ``isError`` always there)."""
    return (isinstance(payload, Mapping) and isinstance(payload.get("content"), list)
            and isinstance(payload.get("isError"), bool) and _DUMP_KEYS.issuperset(payload))


def logged_result_value(payload: Mapping[str, Any]) -> object:
    """What the proxy read from a tool result it logged (``is_logged_result``), for judging it again."""
    content: list[Any] = payload["content"]
    texts = [block["text"] for block in content
             if isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str)]
    text = "\n".join(texts)
    structured = payload.get("structuredContent")
    if payload["isError"]:
        if isinstance(structured, Mapping) and looks_like_error(structured):
            return dict(structured)
        return tool_text_value(text, is_error=True)
    if structured is not None and not wraps_text(structured, text):
        return structured
    if len(texts) == len(content):
        return tool_text_value(text) if texts else None
    return content


def _validation_context(value: object) -> dict[str, Any]:
    text = error_text(value) or ""
    found = _VALIDATION.match(text)
    if found is not None:
        return {"field": found.group("field").strip()[:200], "problem": found.group("problem").strip()[:200]}
    required = _REQUIRED_PROPERTY.search(text)
    if required is not None:
        return {"field": required.group("field")[:200], "problem": "required"}
    zod = _ZOD_PATH.search(text)
    if zod is not None:
        problem = _ZOD_MESSAGE.search(text)
        return {"field": zod.group("field")[:200], "problem": problem.group("problem")[:200] if problem else "invalid"}
    issue = next(_zod_issues(text), None)
    if issue is not None:
        return {"field": issue[0][:200], "problem": issue[1][:200]}
    missing = _MISSING_ARGUMENT.search(text)
    if missing is not None:
        return {"field": missing.group("field")[:200], "problem": "required"}
    return {}


def _zod_issues(text: str) -> Iterator[tuple[str, str]]:
    """(field, problem) of each issue in the SDK's zod text, one per line, ``<problem> at <dotted path>``."""
    found = _ZOD_ISSUES.search(text)
    if found is not None:
        for issue in _ZOD_ISSUE.finditer(found.group("issues")):
            yield issue.group("field"), issue.group("problem").strip()


def _input_validation_message(value: object) -> str:
    """The field and what is wrong with it, from the SDK's text; else the text itself, which names them in the
    validator's words (a generic message would tell the model less than legacy did)."""
    text = error_text(value) or ""
    found_issues = list(itertools.islice(_zod_issues(text), 3))
    room = 200 if len(found_issues) == 1 else 80  # one issue may say more
    issues = [f"{_short(field, 60)}: {_clause(_short(problem, room))}" for field, problem in found_issues]
    found = _validation_context(value)
    if found and not issues:
        issues = [f"{_short(found['field'], 80)}: {_clause(_short(found['problem'], 160))}"]
    while issues:
        which = "that argument" if len(issues) == 1 else "those arguments"
        said = (f"The arguments do not match the tool's input schema ({'; '.join(issues)}). Correct {which}, for "
                "example as the tool's input schema describes it.")
        if len(said) <= MAX_MESSAGE_CHARS and count_sentences(said) <= MAX_SENTENCES:
            return said
        issues.pop()  # the first issues that fit: the model fixes those and hears of the rest next
    own = _INPUT_VALIDATION.match(text)
    words = fit_message(own.group("problem")) if own is not None else None
    return words or ("The arguments do not match the tool's input schema. Correct them, for example as the tool's "
                     "input schema describes it.")


def _clause(text: str) -> str:
    """A validator's problem as one clause of the message ("Invalid enum value. Expected 'a' | 'b'" would make the
    message three sentences, which the contract refuses: the rule failed and the error went unplaced)."""
    return re.sub(r"[.!?]+(?=\s)", ";", text).rstrip(".!? ")


def _short(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut after a word with an ellipsis (never mid-word)."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"


def _tool_context(value: object) -> dict[str, Any]:
    return _tool_of(error_text(value) or "")


def _tool_of(text: str) -> dict[str, Any]:
    found = _UNKNOWN_TOOL.match(text)
    name = (found.group("tool") or found.group("named")) if found is not None else None
    return {"tool": name[:200]} if name else {}


def _text_rule(pattern: re.Pattern[str], code: Code, message: str | Callable[[Any], str] | None, name: str,
               context: Callable[[Any], Mapping[str, Any] | None] | None = None) -> ResultRule:
    def matches(value: object) -> bool:
        if not looks_like_error(value):
            return False
        text = error_text(value)
        return text is not None and pattern.search(text) is not None

    matches.__name__ = name
    return ResultRule(matches, code, message, context, name=name)


def _jsonrpc_code(exc: BaseException) -> int | None:
    error = getattr(exc, "error", None)
    code = getattr(error, "code", None)
    return code if isinstance(code, int) and not isinstance(code, bool) else None


_UNKNOWN_TOOL_MESSAGE: Final = ("There is no tool named {tool} on this server. Call one of the listed tools "
                                 "instead, for example after listing the tools again.")


def mcp() -> Rules:
    """Rules for what MCP servers return: the SDK's error texts (argument validation, unknown tool, a crash
    reported as a bare ``Error executing tool NAME``) and JSON-RPC errors (``mcp.MCPError``) by code."""
    mcp_error = _mcp_error_class()
    exception_rules: list[ExceptionRule] = []
    if mcp_error:
        classes = mcp_error
        exception_rules.append(ExceptionRule(
            _rpc_matcher(classes, -32602, _UNKNOWN_TOOL), Code.NOT_FOUND, _UNKNOWN_TOOL_MESSAGE,
            context=_rpc_tool_context, name="jsonrpc:unknown-tool"))
        for rpc_code, code in JSONRPC_CODES.items():
            exception_rules.append(ExceptionRule(
                _rpc_matcher(classes, rpc_code), code, context=_rpc_context, name=f"jsonrpc:{rpc_code}"))
        exception_rules.append(ExceptionRule(
            classes, Code.UPSTREAM_UNAVAILABLE,
            "The MCP server behind this tool reported a protocol error. Make the identical call again shortly, "
            "for example after a few seconds.", context=_rpc_context, name="jsonrpc:error"))
    result_rules = [
        _text_rule(_VALIDATION, Code.VALIDATION_ERROR,
                   "The arguments do not match the tool's input schema ({field}: {problem}). Correct that "
                   "argument, for example as the tool's input schema describes it.",
                   "mcp:validation", _validation_context),
        _text_rule(_INPUT_VALIDATION, Code.VALIDATION_ERROR, _input_validation_message, "mcp:input-validation",
                   _validation_context),
        _text_rule(_MISSING_ARGUMENT, Code.VALIDATION_ERROR,
                   "The argument {field} is required. Call again with it, for example as the tool's input schema "
                   "describes it.", "mcp:missing-argument", _validation_context),
        _text_rule(_UNKNOWN_TOOL, Code.NOT_FOUND, _UNKNOWN_TOOL_MESSAGE, "mcp:unknown-tool", _tool_context),
        _text_rule(re.compile(r"^\s*Error executing tool [^\s:]+\s*$"), Code.INTERNAL_ERROR, None, "mcp:crash"),
    ]
    return Rules(exception_rules, result_rules)


def _rpc_matcher(classes: tuple[type[BaseException], ...], rpc_code: int,
                 text: re.Pattern[str] | None = None) -> Callable[[BaseException], bool]:
    def matches(exc: BaseException) -> bool:
        if not isinstance(exc, classes) or _jsonrpc_code(exc) != rpc_code:
            return False
        return text is None or text.search(_rpc_message(exc)) is not None

    matches.__name__ = f"jsonrpc:{rpc_code}"
    return matches


def _rpc_message(exc: BaseException) -> str:
    message = getattr(getattr(exc, "error", None), "message", None)
    return message if isinstance(message, str) else str(exc)


def _rpc_context(exc: BaseException) -> dict[str, Any]:
    return {"jsonrpc_code": _jsonrpc_code(exc)}


def _rpc_tool_context(exc: BaseException) -> dict[str, Any]:
    return {"jsonrpc_code": _jsonrpc_code(exc), **_tool_of(_rpc_message(exc))}


def _mcp_error_class() -> tuple[type[BaseException], ...]:
    """``mcp.MCPError`` when the SDK is installed."""
    try:
        from mcp.shared.exceptions import MCPError
    except ImportError:
        return ()
    return (MCPError,)
