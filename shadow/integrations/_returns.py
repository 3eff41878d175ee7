"""The return annotation a wrapper advertises: a primitive legacy type widened to admit the contract's payload."""

from __future__ import annotations

import dataclasses
import inspect
import json
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal

from typing_extensions import TypedDict  # pydantic (MCP output schemas) rejects typing.TypedDict on Python 3.11


class ContractErrorBody(TypedDict):
    """What went wrong, and what to do next."""

    code: str
    message: str
    retryable: bool
    next_action: str
    context: dict[str, Any] | None


class ContractOk(TypedDict):
    """A success of the shadow error contract: {"ok": true, "data": ...}."""

    ok: Literal[True]
    data: Any


class ContractError(TypedDict):
    """A failure of the shadow error contract: {"ok": false, "error": {...}}."""

    ok: Literal[False]
    error: ContractErrorBody


ContractPayload = ContractOk | ContractError


class JsonPayload(dict[str, Any]):
    """The payload a cutover call returns: a plain ``dict`` whose ``str()`` is its JSON text.

    Frameworks that show the model ``str(result)`` (the OpenAI Agents SDK) then show JSON, not a Python repr;
    those that serialise a dict (MCP, LangChain, PydanticAI) see a dict.
    """

    __slots__ = ()

    def __str__(self) -> str:
        return json.dumps(self, ensure_ascii=False, separators=(",", ":"), default=str)
_PRIMITIVES = (str, int, float, bool, bytes, type(None))
_SEQUENCES = (list, tuple, set, frozenset)


def is_primitive(annotation: Any) -> bool:
    """Whether a return annotation is a scalar, a sequence or a union of those: one MCP wraps as ``{"result": ...}``.

    Object types (``dict``, a ``TypedDict``, a pydantic model, a dataclass) are not: widening those would make MCP
    wrap the legacy result too and change what shadow mode returns.
    """
    if annotation is None or annotation in _PRIMITIVES:
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return all(is_primitive(a) for a in typing.get_args(annotation))
    if origin is Literal:
        return True
    return annotation in _SEQUENCES or origin in _SEQUENCES


def _return_annotation(fn: Callable[..., Any], signature: inspect.Signature) -> Any:
    annotation = signature.return_annotation
    if isinstance(annotation, str):
        try:
            annotation = typing.get_type_hints(fn).get("return", inspect.Signature.empty)
        except Exception:
            return inspect.Signature.empty
    return annotation


def widened_signature(fn: Callable[..., Any], signature: inspect.Signature | None) -> inspect.Signature | None:
    """``signature`` with ``-> T`` made ``-> T | ContractOk | ContractError`` when T is primitive, else ``None``.

    MCP frameworks build a tool's output schema from the return annotation and validate structured results against
    it; this lets them accept the cutover payload while a legacy result is served exactly as before.
    """
    if signature is None:
        return None
    annotation = _return_annotation(fn, signature)
    if annotation is inspect.Signature.empty or not is_primitive(annotation):
        return None
    try:  # a __signature__ is taken as is (eval_str does not apply to it): give the frameworks resolved annotations
        signature = inspect.signature(fn, eval_str=True)
    except Exception:
        return None
    return signature.replace(return_annotation=typing.Union[annotation, ContractOk, ContractError])  # noqa: UP007


def object_return(fn: Callable[..., Any]) -> tuple[inspect.Signature, Any] | None:
    """The resolved signature and return type of ``fn`` when it returns a TypedDict, pydantic model or dataclass.

    MCP advertises such a type's fields as the output schema, which a successful cutover payload does not match.
    """
    try:
        signature = inspect.signature(fn, eval_str=True)
    except Exception:
        return None
    annotation = signature.return_annotation
    if isinstance(annotation, type) and (typing.is_typeddict(annotation) or dataclasses.is_dataclass(annotation)
                                         or hasattr(annotation, "model_json_schema")):
        return signature, annotation
    return None


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its local ``#/$defs/...`` references replaced by their definitions."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    result: dict[str, Any] = walk(schema)
    return result


def fastmcp_object_union(legacy: Any) -> Any:
    """For FastMCP: ``legacy | payload`` advertised as ONE object schema, so nothing is wrapped in ``{"result"}``."""
    from pydantic import TypeAdapter, WithJsonSchema

    legacy_schema = _inline(TypeAdapter(legacy).json_schema(mode="serialization"))
    payload_schema = _inline(TypeAdapter(ContractPayload).json_schema(mode="serialization"))
    schema = {"type": "object", "anyOf": [legacy_schema, *payload_schema["anyOf"]]}
    return Annotated[typing.Union[legacy, ContractOk, ContractError], WithJsonSchema(schema, mode="serialization")]  # noqa: UP007


def mcp_object_union(legacy: Any, name: str) -> Any:
    """For MCPServer: a root model of ``legacy | payload`` with an object schema (MCPServer wraps other unions)."""
    from pydantic import ConfigDict, RootModel

    base = RootModel[typing.Union[legacy, ContractOk, ContractError]]  # noqa: UP007
    return type(f"{name}Output", (base,), {"model_config": ConfigDict(json_schema_extra={"type": "object"}),
                                           "__module__": __name__})
