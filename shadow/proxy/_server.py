"""The MCP shadow proxy: a child stdio MCP server's tools, served to the agent through the flag, every call logged."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TextIO

import anyio
import anyio.abc
import anyio.to_thread
from mcp import StdioServerParameters, types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from shadow import _clock as clock
from shadow import _sessions as sessions
from shadow._ids import new_id
from shadow._logs import get_logger
from shadow._names import MAX_NAME, name_problem, storable_name
from shadow.calllog._pending import PendingCall, ToolSpec
from shadow.calllog._records import CallRecord, MarkRecord
from shadow.contract._codes import Code
from shadow.contract._describe import describe
from shadow.contract._guard import Outcome, outcome_of_exception, outcome_of_value
from shadow.contract._payloads import Payload, ToolError
from shadow.contract._rules import ExceptionRule, Rules
from shadow.contract._schema import schema
from shadow.flags import _db as flagmod
from shadow.flags._db import Mode, Variant
from shadow.normalize import _http as normalize
from shadow.proxy._results import block_value, result_dump, result_value, structured_result
from shadow.proxy._upstream import (
    CONNECTION_CLOSED,
    DEFAULT_START_TIMEOUT,
    DEFAULT_TIMEOUT,
    REQUEST_TIMEOUT,
    ProxyStartError,
    Upstream,
    UpstreamTimeout,
    UpstreamUnavailable,
    leaf,
)
from shadow.typing import FlagSource

log = get_logger("shadow.proxy")

__all__ = [
    "CONNECTION_CLOSED", "DEFAULT_START_TIMEOUT", "DEFAULT_TIMEOUT", "PROXY_RULES", "REQUEST_TIMEOUT", "ProxyCall",
    "ProxyStartError", "ShadowProxy", "Upstream", "UpstreamTimeout", "UpstreamUnavailable", "block_value",
    "cutover_tool", "is_idempotent", "proxy_rules", "result_dump", "result_value", "serve", "stored_tool_name",
    "structured_result",
]

PROXY_RULES: Final = Rules((
    ExceptionRule(UpstreamTimeout, Code.UPSTREAM_TIMEOUT,
                  "The MCP server behind this tool did not answer in time. Make the identical call again, for "
                  "example after a short pause.", name="proxy:timeout"),
    ExceptionRule(UpstreamUnavailable, Code.UPSTREAM_UNAVAILABLE,
                  "The MCP server behind this tool stopped or could not be started. Make the identical call again "
                  "shortly, for example after a few seconds.", name="proxy:unavailable"),
))


def proxy_rules(rules: Rules | None = None) -> Rules:
    """The proxy's rules: yours first (without the built-in ones a ``Rules.default().on_result(...)`` module
    carries, which come last anyway), then the proxy's own, ``normalize.mcp()`` and ``Rules.default()``."""
    own = rules.without_defaults() if rules is not None else Rules.empty()
    return own + PROXY_RULES + normalize.mcp() + Rules.default()


def stored_tool_name(name: str) -> str:
    """The name the call log and the flags know an upstream tool by: its own when the log can store it, else one
    made storable (NULs replaced, cut short) and ended by a hash of the original, so that names stay apart."""
    if name_problem(name) is None:
        return name
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return f"{storable_name(name, MAX_NAME - 9)}#{digest}"


def is_idempotent(tool: types.Tool | None) -> bool:
    """Whether a blind retry is safe: the tool says it is read-only or idempotent (MCP's defaults say neither)."""
    hints = tool.annotations if tool is not None else None
    return hints is not None and bool(hints.read_only_hint or hints.idempotent_hint)


#: What a cutover tool's description ends with: the codes paragraph in brief (the default: the model reads every
#: tool's description with every request), in full (``shadow describe``), or nothing (it is in the system prompt).
Paragraph = Literal["brief", "full", "none"]


def cutover_tool(tool: types.Tool, paragraph: Paragraph = "brief") -> types.Tool:
    """The tool as served in cutover: its description carries the codes paragraph, its output schema the contract."""
    update: dict[str, Any] = {"output_schema": schema()}
    if paragraph != "none":
        text = describe(fmt="brief" if paragraph == "brief" else "text").strip()
        update["description"] = f"{tool.description.rstrip()}\n\n{text}" if tool.description else text
    return tool.model_copy(update=update)


@dataclass(slots=True, kw_only=True)
class ProxyCall(PendingCall):
    """A proxied call's raw facts; ``build`` (in the writer thread) reads the MCP result and makes the record."""

    result: types.CallToolResult | None = None

    def build(self) -> CallRecord:
        """The call record; the legacy payload is the MCP result the client received."""
        if self.result is None:
            return PendingCall.build(self)
        outcome = self.outcome
        if outcome is None:
            try:
                outcome = self.spec.outcome(result_value(self.result), None)
            except Exception as exc:
                log.warning("proxy_translation_failed", tool=self.spec.name, error_type=type(exc).__name__)
        return dataclasses.replace(self, result=None, outcome=outcome, value=result_dump(self.result)).build()


def _as_mcp_error(exc: BaseException) -> MCPError:
    """What a client talking to the child directly would have seen: a JSON-RPC error."""
    if isinstance(exc, MCPError):
        return exc
    if isinstance(exc, UpstreamTimeout):
        return MCPError(code=REQUEST_TIMEOUT, message="Request 'tools/call' timed out")
    return MCPError(code=CONNECTION_CLOSED, message="Connection closed")


# ---------------------------------------------------------------- the server the agent talks to


class ShadowProxy:
    """Serves the child's tools: per tool the flag decides what the client receives; every call is logged."""

    def __init__(self, name: str, upstream: Upstream, *, rules: Rules | None = None,
                 flags: FlagSource | None = None, session_id: str | None = None,
                 paragraph: Paragraph = "brief") -> None:
        self.name = name
        self.paragraph: Paragraph = paragraph
        self.upstream = upstream
        self.rules = proxy_rules(rules)
        self.flags = flags
        self.session_id = session_id or f"mcp-{name}-{uuid.uuid4().hex[:16]}"
        self.tools: dict[str, types.Tool] = {}
        self._specs: dict[str, ToolSpec] = {}
        self._names: dict[str, str] = {}
        self._logged = False

    def _name(self, tool: str) -> str:
        """``stored_tool_name(tool)``; a name that had to change is reported once, with what it is logged as."""
        found = self._names.get(tool)
        if found is None:
            found = self._names[tool] = stored_tool_name(tool)
            if found != tool:
                shown = tool if len(tool) <= 60 else tool[:60] + "…"
                log.warning("proxy_tool_name_normalised", tool=shown, problem=name_problem(tool), logged_as=found,
                            hint="the call is forwarded under its own name; flags and the call log use logged_as")
        return found

    def _flags(self) -> FlagSource:
        return self.flags or flagmod.current()

    def _served_structured(self, tool: str) -> bool:
        try:
            state = self._flags().state(self._name(tool))
            return state.mode is Mode.CUTOVER and state.variant(self.session_id) is Variant.STRUCTURED
        except Exception as exc:
            log.warning("proxy_flag_failed", tool=tool, error_type=type(exc).__name__)
            return False

    async def list_tools(self, _ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        """The child's tools; those in the structured arm carry the codes paragraph and the contract schema."""
        try:
            tools = await self.upstream.list_tools()
        except (UpstreamUnavailable, TimeoutError, MCPError) as exc:
            if not self.tools:
                raise _as_mcp_error(exc) from None
            tools = list(self.tools.values())
        self.tools = {tool.name: tool for tool in tools}
        self._specs.clear()
        return types.ListToolsResult(
            tools=[cutover_tool(tool, self.paragraph) if self._served_structured(tool.name) else tool
                   for tool in tools])

    def _begin(self, tool: str) -> tuple[Mode, Variant, int] | None:
        try:
            state = self._flags().state(self._name(tool))
            if state.mode is Mode.LEGACY:
                return None
            self._logged = True
            return state.mode, state.variant(self.session_id), sessions.next_seq(self.session_id)
        except Exception as exc:
            log.warning("proxy_flag_failed", tool=tool, error_type=type(exc).__name__)
            return None

    async def call_tool(self, _ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        """Forward the call; in the structured arm, answer with the structured payload instead."""
        name, forwarded = params.name, params.arguments  # forwarded as the client sent them (None stays None)
        arguments = dict(forwarded or {})
        started = self._begin(name)
        if started is None:
            try:
                return await self.upstream.call_tool(name, forwarded, bounded=False)
            except (UpstreamUnavailable, UpstreamTimeout) as exc:
                raise _as_mcp_error(exc) from None
        # --timeout bounds only a call whose answer the proxy serves (the structured arm); one whose legacy
        # result reaches the client waits as long as the child takes, as a direct connection would
        bounded = started[1] is Variant.STRUCTURED
        t0, p0 = clock.now_ns(), time.perf_counter_ns()
        try:
            result = await self.upstream.call_tool(name, forwarded, bounded=bounded)
        except anyio.get_cancelled_exc_class() as exc:  # the client gave up (or left): logged as cancelled
            self._finish(started, name, arguments, t0, time.perf_counter_ns() - p0, exc=exc)
            raise
        except (UpstreamUnavailable, UpstreamTimeout, MCPError) as exc:
            payload = self._finish(started, name, arguments, t0, time.perf_counter_ns() - p0, exc=exc)
            if payload is not None:
                return structured_result(payload)
            raise _as_mcp_error(exc) from None
        payload = self._finish(started, name, arguments, t0, time.perf_counter_ns() - p0, result=result)
        return result if payload is None else structured_result(payload, result)

    def _finish(
        self, started: tuple[Mode, Variant, int], tool: str, arguments: dict[str, Any], t0: int, latency: int, *,
        result: types.CallToolResult | None = None, exc: BaseException | None = None,
    ) -> Payload | None:
        mode, variant, seq = started
        spec = self._spec(tool)
        idempotent = spec.idempotent
        outcome: Outcome | None = None
        if variant is Variant.STRUCTURED and isinstance(exc, Exception | None):
            try:
                if exc is not None:
                    outcome = outcome_of_exception(exc, rules=self.rules, idempotent=idempotent, tool=tool, quiet=True)
                else:
                    assert result is not None
                    outcome = outcome_of_value(result_value(result), rules=self.rules, idempotent=idempotent,
                                               tool=tool)
            except Exception as failure:
                log.warning("proxy_translation_failed", tool=tool, error_type=type(failure).__name__)
                outcome = Outcome(ToolError.of(Code.INTERNAL_ERROR).payload(), unmapped=True)
        try:
            from shadow.calllog._writer import get_writer

            get_writer().submit(ProxyCall(
                spec=spec, mode=mode, variant=variant, session_id=self.session_id, seq=seq, started_ns=t0,
                latency_ns=latency, args=(), kwargs=arguments, exc=exc, outcome=outcome, result=result,
            ))
        except Exception as failure:
            log.warning("proxy_log_failed", tool=tool, error_type=type(failure).__name__)
        return outcome.payload if outcome is not None else None

    def _spec(self, tool: str) -> ToolSpec:
        found = self._specs.get(tool)
        if found is None:
            found = self._specs[tool] = ToolSpec(self._name(tool), self.rules, is_idempotent(self.tools.get(tool)),
                                                 None, "proxy")
        return found

    # -- prompts and resources pass through unchanged

    async def _forward(self, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            link = await self.upstream.link()
        except UpstreamUnavailable as exc:
            raise _as_mcp_error(exc) from None
        return await getattr(link.session, method)(*args, **kwargs)  # as long as the child takes, as directly

    async def list_prompts(self, _ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        """The child's prompts."""
        found: types.ListPromptsResult = await self._forward("list_prompts", params=params)
        return found

    async def get_prompt(self, _ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        """One of the child's prompts."""
        found: types.GetPromptResult = await self._forward("get_prompt", params.name, params.arguments)
        return found

    async def list_resources(self, _ctx: Any,
                             params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        """The child's resources."""
        found: types.ListResourcesResult = await self._forward("list_resources", params=params)
        return found

    async def list_resource_templates(
        self, _ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        """The child's resource templates."""
        found: types.ListResourceTemplatesResult = await self._forward("list_resource_templates", params=params)
        return found

    async def read_resource(self, _ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        """One of the child's resources."""
        found: types.ReadResourceResult = await self._forward("read_resource", params.uri)
        return found

    def server(self, init: types.InitializeResult) -> Server[Any]:
        """The MCP server the agent's client talks to, offering what the child offers."""
        caps = init.capabilities
        handlers: dict[str, Any] = {"on_list_tools": self.list_tools, "on_call_tool": self.call_tool}
        if caps.prompts is not None:
            handlers.update(on_list_prompts=self.list_prompts, on_get_prompt=self.get_prompt)
        if caps.resources is not None:
            handlers.update(on_list_resources=self.list_resources, on_read_resource=self.read_resource,
                            on_list_resource_templates=self.list_resource_templates)
        return Server(self.name, version=init.server_info.version or "", instructions=init.instructions,
                      **handlers)

    def end(self) -> None:
        """Record that the agent's session ended (the client disconnected), when any of its calls was logged."""
        if not self._logged:
            return
        try:
            from shadow.calllog._writer import get_writer

            get_writer().submit(MarkRecord(new_id(), self.session_id, sessions.next_seq(self.session_id), clock.now(),
                                           "end", str(os.getpid()), sessions.HOST, "proxy"))
        except Exception as exc:
            log.warning("proxy_mark_failed", error_type=type(exc).__name__)


async def serve(
    command: Sequence[str], *, name: str, rules: Rules | None = None, timeout: float = DEFAULT_TIMEOUT,
    start_timeout: float = DEFAULT_START_TIMEOUT, flags: FlagSource | None = None,
    env: Mapping[str, str] | None = None, errlog: TextIO = sys.stderr, paragraph: Paragraph = "brief",
) -> None:
    """Run the proxy on this process's stdin and stdout until the client disconnects.

    Raises ``ProxyStartError`` when the child command does not start as an MCP server.
    """
    if not command:
        raise ProxyStartError("no MCP server command given; put it after `--`, for example: "
                              "shadow proxy --name files -- python server.py")
    params = StdioServerParameters(command=command[0], args=list(command[1:]),
                                   env=dict(env if env is not None else os.environ))
    upstream = Upstream(params, timeout=timeout, start_timeout=start_timeout, errlog=errlog)
    try:
        async with anyio.create_task_group() as group:
            init = await upstream.start(group)
            proxy = ShadowProxy(name, upstream, rules=rules, flags=flags, paragraph=paragraph)
            await anyio.to_thread.run_sync(_warm_up, proxy)
            log.info("proxy_started", name=name, command=upstream.command, session_id=proxy.session_id)
            server = proxy.server(init)
            try:
                async with stdio_server() as (read, write):
                    await server.run(read, write, server.create_initialization_options())
            finally:
                proxy.end()
                await upstream.close()
                group.cancel_scope.cancel()
    except BaseExceptionGroup as group_error:
        raise leaf(group_error) from None
    finally:
        from shadow.calllog._writer import flush

        await anyio.to_thread.run_sync(flush, 10.0)


def _warm_up(proxy: ShadowProxy) -> None:
    """Load flags (waiting, bounded) and start the writer before the first call, so no call waits on either."""
    try:
        from shadow.flags._db import wait_for

        if not wait_for(proxy._flags(), 10.0):
            log.warning("proxy_flags_not_loaded", timeout=10.0)
        from shadow.calllog._writer import get_writer

        get_writer()
    except Exception as exc:
        log.warning("proxy_warm_up_failed", error_type=type(exc).__name__)
