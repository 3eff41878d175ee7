"""The behavioural evaluation's examples: per code, ten contract-valid error payloads, each in a short agent turn."""

from __future__ import annotations

import functools
import json
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from types import ModuleType
from typing import Any, Final

from shadow._redact import JSONValue
from shadow.cli._loader import import_user_module
from shadow.contract._codes import CODE_TABLE, Code, NextAction
from shadow.contract._describe import describe
from shadow.contract._payloads import ErrorPayload, ToolError
from shadow.contract._rules import Rules
from shadow.contract._schema import validate

PER_CODE: Final = 10
SCENARIO_FILE: Final = "scenarios.json"
SCENARIO_FORMAT: Final = "shadow-eval-scenarios/1"

#: A neutral agent prompt: it says nothing about errors, so the payload and the tool description decide.
SYSTEM_PROMPT: Final = (
    "You are an assistant that carries out the user's requests with the tools provided. "
    "Call a tool when it helps; reply to the user when you are done or need something from them."
)

#: Values for placeholders in a rule's message template that the example's context does not supply.
_SAMPLE_VALUES: Final[Mapping[str, JSONValue]] = {
    "id": "4711", "name": "report-2025", "field": "due_date", "path": "reports/q1.csv", "status": 404,
    "line": 3, "column": 14, "problem": "Expecting ',' delimiter", "encoding": "utf-8", "limit": 50,
    "size": 4096, "retry_after_ms": 2000, "received": "next friday", "expected": "2025-03-14",
}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: name, plain description, JSON Schema of the arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def definition(self, *, codes_paragraph: bool) -> dict[str, Any]:
        """The OpenAI function-tool definition; with ``codes_paragraph`` the description carries ``describe()``."""
        text = f"{self.description}\n\n{describe()}" if codes_paragraph else self.description
        return {
            "type": "function",
            "function": {"name": self.name, "description": text, "parameters": dict(self.parameters)},
        }


@dataclass(frozen=True, slots=True)
class UserTool:
    """One of the user's own tools: its spec, example arguments, the request that leads to it, its codes."""

    spec: ToolSpec
    arguments: Mapping[str, JSONValue]
    request: str
    codes: frozenset[Code] | None = None  # None: any code


@dataclass(frozen=True, slots=True)
class Example:
    """One agent turn ending in an error payload; the reply to it shows what the model does next."""

    code: Code
    index: int  # 1..PER_CODE
    tool: ToolSpec
    request: str
    arguments: Mapping[str, JSONValue]
    error: ToolError
    source: str = "built-in"  # built-in, rules or tools: where the message and tool came from

    @property
    def id(self) -> str:
        """Stable id, for example ``validation_error-01``."""
        return f"{self.code.value}-{self.index:02d}"

    @property
    def expected(self) -> NextAction:
        """The next action the payload asks for."""
        return self.error.next_action

    @property
    def call_id(self) -> str:
        """The tool call id used in the turn."""
        return f"call_{self.code.value}_{self.index:02d}"

    def payload(self) -> ErrorPayload:
        """The structured error payload the tool returned."""
        return self.error.payload()

    def messages(self, tool_content: str) -> list[dict[str, Any]]:
        """System prompt, user request, the assistant's tool call, and the tool's result ``tool_content``."""
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": self.request},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": self.call_id,
                        "type": "function",
                        "function": {"name": self.tool.name, "arguments": json.dumps(dict(self.arguments))},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": self.call_id, "content": tool_content},
        ]

    def request_body(self, model: str, *, legacy_payload: JSONValue | None = None) -> dict[str, Any]:
        """The chat completions request: the structured payload with the codes paragraph, or a legacy payload.

        The legacy arm is what the model saw before cutover: the tool's plain description and the legacy result.
        """
        if legacy_payload is None:
            content = json.dumps(self.payload(), ensure_ascii=False)
            definition = self.tool.definition(codes_paragraph=True)
        else:
            content = render_legacy(legacy_payload)
            definition = self.tool.definition(codes_paragraph=False)
        return {
            "model": model,
            "messages": self.messages(content),
            "tools": [definition],
            "tool_choice": "auto",
            "temperature": 0,
        }


def render_legacy(value: JSONValue) -> str:
    """A legacy result as the model read it: a string as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class _Scenario:
    tool: str
    request: str
    arguments: dict[str, JSONValue]
    message: str
    context: dict[str, JSONValue] | None


@dataclass(frozen=True, slots=True)
class _Catalogue:
    tools: dict[str, ToolSpec]
    scenarios: dict[Code, tuple[_Scenario, ...]] = field(default_factory=dict)


@functools.cache
def _catalogue() -> _Catalogue:
    text = resources.files("shadow.eval").joinpath(SCENARIO_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    if data.get("format") != SCENARIO_FORMAT:
        raise ValueError(f"{SCENARIO_FILE} is not in the {SCENARIO_FORMAT} format")
    tools = {
        name: ToolSpec(name, item["description"], item["parameters"]) for name, item in data["tools"].items()
    }
    scenarios: dict[Code, tuple[_Scenario, ...]] = {}
    for code in CODE_TABLE:
        rows = data["scenarios"].get(code.value, [])
        if len(rows) != PER_CODE:
            raise ValueError(f"{SCENARIO_FILE}: {code.value} has {len(rows)} scenarios, not {PER_CODE}")
        scenarios[code] = tuple(
            _Scenario(row["tool"], row["request"], row["arguments"], row["message"], row["context"]) for row in rows
        )
    return _Catalogue(tools, scenarios)


def builtin_tools() -> tuple[ToolSpec, ...]:
    """The tools the built-in examples use."""
    return tuple(_catalogue().tools.values())


def build_examples(
    rules: Rules | None = None,
    tools: Sequence[UserTool] = (),
    *,
    codes: Iterable[Code | str] | None = None,
) -> tuple[Example, ...]:
    """Ten examples per code (``codes`` narrows them), every payload checked with ``shadow.validate``.

    Messages come from the user's own ``rules`` (their string templates for that code, in rule order) before the
    built-in ones; the tool, its arguments and the request come from the user's ``tools`` when given.
    """
    wanted = [Code(c) for c in codes] if codes is not None else list(CODE_TABLE)
    catalogue = _catalogue()
    own = rule_messages(rules) if rules is not None else {}
    out: list[Example] = []
    for code in wanted:
        candidates = [t for t in tools if t.codes is None or code in t.codes]
        user_messages = own.get(code, [])
        for index, scenario in enumerate(catalogue.scenarios[code], start=1):
            sources: list[str] = []
            spec = catalogue.tools[scenario.tool]
            arguments: Mapping[str, JSONValue] = scenario.arguments
            request = scenario.request
            if candidates:
                chosen = candidates[(index - 1) % len(candidates)]
                spec, arguments, request = chosen.spec, chosen.arguments, chosen.request
                sources.append("tools")
            error = ToolError.of(code, scenario.message, context=scenario.context)
            if index <= len(user_messages):
                own_error = _from_template(code, user_messages[index - 1], scenario.context)
                if own_error is not None:
                    error = own_error
                    sources.insert(0, "rules")
            validate(error.payload())
            source = "+".join(sources) or "built-in"
            out.append(Example(code, index, spec, request, dict(arguments), error, source))
    return tuple(out)


def rule_messages(rules: Rules) -> dict[Code, list[str]]:
    """The distinct string message templates of the user's own rules (those not in ``Rules.default()``), per code."""
    default = Rules.default()
    builtin = set(map(id, default.exception_rules)) | set(map(id, default.result_rules))
    found: dict[Code, list[str]] = {}
    candidates: list[tuple[object, Code | None, object]] = [(r, r.code, r.message) for r in rules.exception_rules]
    candidates += [(r, r.code, r.message) for r in rules.result_rules]
    for rule, code, message in candidates:
        if id(rule) in builtin or code is None or not isinstance(message, str):
            continue
        messages = found.setdefault(code, [])
        if message not in messages and _usable(message):
            messages.append(message)
    return found


def _usable(template: str) -> bool:
    return _from_template(Code.INTERNAL_ERROR, template, None) is not None


def _from_template(code: Code, template: str, context: Mapping[str, JSONValue] | None) -> ToolError | None:
    """The error a rule's template gives for this example, or None when the template cannot make a valid one."""
    try:
        message, filled = _fill(template, context)
        return ToolError.of(code, message, context=filled)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def _fill(template: str, context: Mapping[str, JSONValue] | None) -> tuple[str, dict[str, JSONValue] | None]:
    """Format a rule's template as the rule would; placeholders take the example's context, else sample values.

    The context of the result holds the values the message quotes (and the example's ``retry_after_ms``): the
    built-in example's other context keys describe a different tool, so they are not carried over.
    """
    names = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    values: dict[str, JSONValue] = {}
    for name in names:
        key = name.split(".")[0].split("[")[0]
        if not key:
            continue
        if context and key in context:
            values[key] = context[key]
        else:
            values[key] = _SAMPLE_VALUES.get(key, key.replace("_", " "))
    message = template.format_map(values)
    if context and "retry_after_ms" in context:
        values.setdefault("retry_after_ms", context["retry_after_ms"])
    return message, values or None


# ---------------------------------------------------------------- the user's module: RULES and TOOLS


@dataclass(frozen=True, slots=True)
class UserModule:
    """What ``--rules MODULE`` provided: ``RULES`` (a ``shadow.Rules``) and/or ``TOOLS``."""

    name: str
    rules: Rules | None
    tools: tuple[UserTool, ...]


def load_user_module(ref: str) -> UserModule:
    """Import ``ref`` (a dotted module name or a ``.py`` file) and read its ``RULES`` and ``TOOLS``.

    Raises ``ValueError`` saying what to fix when the module cannot be imported or holds neither.
    """
    module = _import(ref)
    rules = getattr(module, "RULES", None)
    raw_tools = getattr(module, "TOOLS", None)
    if rules is None and raw_tools is None:
        raise ValueError(
            f"{ref} defines neither RULES nor TOOLS; add for example RULES = shadow.Rules.default().on(KeyError, "
            '"not_found", "No item has the id {id}. List the items first, for example with list_items.")'
        )
    if rules is not None and not isinstance(rules, Rules):
        raise ValueError(f"{ref}.RULES is a {type(rules).__name__}; it must be a shadow.Rules")
    tools: tuple[UserTool, ...] = ()
    if raw_tools is not None:
        if isinstance(raw_tools, str | bytes | Mapping) or not isinstance(raw_tools, Iterable):
            raise ValueError(f"{ref}.TOOLS must be a list of tool definitions (mappings)")
        tools = tuple(user_tool(item, where=f"{ref}.TOOLS[{i}]") for i, item in enumerate(raw_tools))
    return UserModule(module.__name__, rules, tools)


def _import(ref: str) -> ModuleType:
    """Import a ``.py`` file or a dotted name (see ``shadow.cli._loader``)."""
    return import_user_module(ref, prefix="_shadow_eval_user")


def user_tool(item: object, *, where: str = "tool") -> UserTool:
    """A ``UserTool`` from an OpenAI function tool (``{"type": "function", "function": {...}}``) or a flat mapping.

    Keys: ``name``, ``description``, ``parameters`` (JSON Schema); optional ``arguments`` (example call, else
    generated from the schema), ``request`` (the user's words), ``codes`` (the codes this tool can return).
    """
    if not isinstance(item, Mapping):
        raise ValueError(f"{where} must be a mapping with name, description and parameters")
    body = item.get("function", item)
    if not isinstance(body, Mapping):
        raise ValueError(f"{where}.function must be a mapping")
    name, description = body.get("name"), body.get("description", "")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where} needs a 'name', for example 'create_task'")
    if not isinstance(description, str):
        raise ValueError(f"{where}.description must be text")
    parameters = body.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(parameters, Mapping):
        raise ValueError(f"{where}.parameters must be a JSON Schema object")
    arguments = item.get("arguments", body.get("arguments"))
    if arguments is None:
        generated = sample_value(parameters)
        arguments = generated if isinstance(generated, dict) else {}
    if not isinstance(arguments, Mapping):
        raise ValueError(f"{where}.arguments must be a mapping of example arguments")
    request = item.get("request") or f"Please use {name} for me."
    if not isinstance(request, str):
        raise ValueError(f"{where}.request must be text")
    raw_codes = item.get("codes")
    codes: frozenset[Code] | None = None
    if raw_codes is not None:
        try:
            codes = frozenset(Code(c) for c in raw_codes)
        except (ValueError, TypeError):
            known = ", ".join(c.value for c in Code)
            raise ValueError(f"{where}.codes must list documented codes: {known}") from None
    try:
        plain = json.loads(json.dumps(dict(arguments)))
    except (TypeError, ValueError):
        raise ValueError(f"{where}.arguments must be plain JSON data (str, number, bool, None, list, dict)") from None
    spec = ToolSpec(name, description or name, dict(parameters))
    return UserTool(spec, plain, request, codes)


def sample_value(schema: Mapping[str, Any], depth: int = 0) -> JSONValue:
    """A plausible value for a JSON Schema: its example, default or first enum value, else one by type."""
    for key in ("examples", "enum"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return _plain(options[0])
    if "default" in schema:
        return _plain(schema["default"])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        if depth > 4:
            return {}
        properties = schema.get("properties", {})
        required = schema.get("required") or list(properties)
        return {name: sample_value(properties[name], depth + 1) for name in required if name in properties}
    if kind == "array":
        items = schema.get("items", {})
        return [sample_value(items, depth + 1)] if isinstance(items, Mapping) and depth <= 4 else []
    if kind == "integer":
        return max(int(schema.get("minimum", 1)), 1)
    if kind == "number":
        return float(schema.get("minimum", 1.5))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _sample_string(schema)


def _plain(value: object) -> JSONValue:
    plain: JSONValue = json.loads(json.dumps(value))
    return plain


def _sample_string(schema: Mapping[str, Any]) -> str:
    formats = {"date": "2025-03-14", "date-time": "2025-03-14T10:00:00+01:00", "email": "ada@example.com",
               "uri": "https://example.com/item/1", "uuid": "0190f5c8-6f2a-7c1e-9b3d-2a4e5f6a7b8c"}
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in formats:
        return formats[fmt]
    return "example"
