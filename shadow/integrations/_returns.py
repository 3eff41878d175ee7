"""The return annotation a wrapper advertises: the legacy type widened to admit the contract's payload."""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal

# pydantic (MCP output schemas) rejects typing.TypedDict on Python 3.11
from typing_extensions import TypedDict, is_typeddict


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
    """``signature`` with its return annotation widened to admit the contract's payload, else ``None``.

    MCP frameworks build a tool's output schema from the return annotation and validate structured results against
    it; this lets them accept the cutover payload while a legacy result is served exactly as before. A primitive or a
    union ``-> T`` becomes ``T | ContractOk | ContractError`` (wrapped in ``{"result": ...}`` as before); an object type
    (a pydantic model, dataclass, TypedDict, ``dict[str, V]``) becomes ``object_union(T)``, one object schema
    neither FastMCP nor MCPServer wraps, so shadow mode serves the same structured content.
    """
    if signature is None:
        return None
    annotation = _return_annotation(fn, signature)
    if annotation is inspect.Signature.empty:
        return None
    # a union stays a union: FastMCP and MCPServer wrap it in {"result": ...} before and after
    primitive = is_primitive(annotation) or typing.get_origin(annotation) in (typing.Union, types.UnionType)
    if not primitive and not is_object(annotation):
        return None
    try:  # a __signature__ is taken as is (eval_str does not apply to it): give the frameworks resolved annotations
        signature = inspect.signature(fn, eval_str=True)
    except Exception:
        return None
    if primitive:
        return signature.replace(return_annotation=typing.Union[annotation, ContractOk, ContractError])  # noqa: UP007
    widened = object_union(annotation, str(getattr(fn, "__name__", "tool")))
    return None if widened is None else signature.replace(return_annotation=widened)


def is_object(annotation: Any) -> bool:
    """Whether MCP advertises ``annotation``'s own fields as the output schema: a pydantic model, a dataclass, a
    TypedDict or ``dict[str, V]`` (not ``dict[str, Any]``, which admits the payload already)."""
    if isinstance(annotation, type):
        return bool(is_typeddict(annotation) or dataclasses.is_dataclass(annotation)
                    or hasattr(annotation, "model_json_schema"))
    if typing.get_origin(annotation) is dict:
        key, value = (*typing.get_args(annotation), Any, Any)[:2]
        return key is str and value is not Any
    return False


def object_return(fn: Callable[..., Any]) -> tuple[inspect.Signature, Any] | None:
    """The resolved signature and return type of ``fn`` when it returns a TypedDict, pydantic model or dataclass.

    MCP advertises such a type's fields as the output schema, which a successful cutover payload does not match.
    """
    try:
        signature = inspect.signature(fn, eval_str=True)
    except Exception:
        return None
    annotation = signature.return_annotation
    if isinstance(annotation, type) and is_object(annotation):
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


def schema_union(legacy: dict[str, Any]) -> dict[str, Any]:
    """An output schema the user wrote (FastMCP's ``output_schema=``), widened to admit the payload: one object
    schema, ``anyOf`` the user's (its ``$defs`` kept at the top) and the payload's two shapes."""
    from pydantic import TypeAdapter

    payload_schema = _inline(TypeAdapter(ContractPayload).json_schema(mode="serialization"))
    own = {k: v for k, v in legacy.items() if k != "$defs"}
    widened: dict[str, Any] = {"type": "object", "anyOf": [own, *payload_schema["anyOf"]]}
    if "$defs" in legacy:
        widened["$defs"] = legacy["$defs"]
    return widened


def mcp_object_union(legacy: Any, name: str) -> Any:
    """For MCPServer: a root model of ``legacy | payload`` with an object schema (MCPServer wraps other unions)."""
    from pydantic import ConfigDict, RootModel

    union: Any = typing.Union[_readable(legacy), ContractOk, ContractError]  # noqa: UP007
    base: Any = RootModel[union]
    return type(f"{name}Output", (base,), {"model_config": ConfigDict(json_schema_extra={"type": "object"}),
                                           "__module__": __name__})


def object_union(legacy: Any, name: str) -> Any:
    """What the plain ``@shadow.tool`` advertises for an object return type: ``legacy | payload`` as one object schema.

    A ``BaseModel`` subclass, so MCPServer uses it as is (it wraps any other union in ``{"result"}``), whose schema,
    validator and serializer are the union's own: FastMCP, which serialises a result through its return type, then
    serves a legacy value as before, without a serializer warning. ``None`` when pydantic is not installed or cannot
    describe ``legacy`` (no MCP framework could use the annotation then either).
    """
    try:
        from pydantic import BaseModel

        union: Any = typing.Union[_readable(legacy), ContractOk, ContractError]  # noqa: UP007

        def core_schema(cls: type, source: Any, handler: Any) -> Any:
            return handler.generate_schema(union)

        def json_schema(cls: type, schema: Any, handler: Any) -> Any:
            return {"type": "object", **handler(schema)}

        output: Any = type(f"{name}Output", (BaseModel,), {
            "__module__": __name__, "__doc__": f"What {name} returns, or the shadow contract's payload.",
            "__get_pydantic_core_schema__": classmethod(core_schema),
            "__get_pydantic_json_schema__": classmethod(json_schema)})
        from pydantic import TypeAdapter

        TypeAdapter(output).json_schema(mode="serialization")  # a type pydantic cannot describe fails here, not later
        return output
    except Exception:
        return None


def _readable(legacy: Any) -> Any:
    """``legacy``, with a ``typing.TypedDict`` rebuilt as a ``typing_extensions`` one (pydantic refuses the former
    below Python 3.12, which MCPServer works around for a bare return type but not inside a union)."""
    if sys.version_info >= (3, 12) or not is_typeddict(legacy) or type(legacy).__module__ != "typing":
        return legacy
    items = {}
    for key, hint in typing.get_type_hints(legacy, include_extras=True).items():
        qualified = typing.get_origin(hint) in (typing.Required, typing.NotRequired)
        items[key] = hint if qualified or key in legacy.__required_keys__ else typing.NotRequired[hint]
    rebuilt = typing.cast(Any, TypedDict)(legacy.__name__, items)  # the functional form, with computed keys
    for attribute in ("__doc__", "__module__", "__qualname__"):
        setattr(rebuilt, attribute, getattr(legacy, attribute))
    return rebuilt
