"""The child MCP server behind ``shadow proxy``: started, restarted after it exits, called (bounded or not)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TextIO

import anyio
import anyio.abc
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from shadow._logs import get_logger

log = get_logger("shadow.proxy")

DEFAULT_TIMEOUT: Final = 60.0
DEFAULT_START_TIMEOUT: Final = 30.0
CONNECTION_CLOSED: Final = -32000
REQUEST_TIMEOUT: Final = -32001


class UpstreamUnavailable(ConnectionError):
    """The MCP server behind the proxy could not be started, or exited (it is restarted on the next call)."""


class UpstreamTimeout(TimeoutError):
    """The MCP server behind the proxy did not answer within the proxy's timeout."""


class ProxyStartError(Exception):
    """The child command could not be started as an MCP server; the message says how to fix it."""


@dataclass(slots=True)
class _Link:
    session: ClientSession
    init: types.InitializeResult
    stop: anyio.Event
    dead: anyio.Event


async def _pump(
    source: Any, sink: anyio.abc.ObjectSendStream[SessionMessage | Exception], dead: anyio.Event
) -> None:
    """Forward the child's messages; when its stdout ends (it exited), mark the link dead."""
    try:
        async with sink:
            async for item in source:
                await sink.send(item)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
        pass
    finally:
        dead.set()


def leaf(exc: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class Upstream:
    """The child MCP server: started, restarted after it exits, called with or without the proxy's timeout."""

    def __init__(self, params: StdioServerParameters, *, timeout: float = DEFAULT_TIMEOUT,
                 start_timeout: float = DEFAULT_START_TIMEOUT, errlog: TextIO = sys.stderr) -> None:
        if timeout <= 0 or start_timeout <= 0:
            raise ValueError(f"timeouts must be positive numbers of seconds, not {timeout!r}, {start_timeout!r}")
        self.params, self.timeout, self.start_timeout, self.errlog = params, timeout, start_timeout, errlog
        self.starts = 0
        self._link: _Link | None = None
        self._lock = anyio.Lock()
        self._group: anyio.abc.TaskGroup | None = None

    @property
    def command(self) -> str:
        """The child command line, for messages."""
        return " ".join([self.params.command, *self.params.args])

    async def start(self, group: anyio.abc.TaskGroup) -> types.InitializeResult:
        """Start the child and finish the MCP handshake; ``ProxyStartError`` says why it could not."""
        self._group = group
        try:
            link = await self._open()
        except UpstreamUnavailable as exc:
            raise ProxyStartError(str(exc)) from None
        return link.init

    async def _open(self) -> _Link:
        assert self._group is not None, "Upstream.start() first"
        try:
            link: _Link = await self._group.start(self._run)
        except BaseException as group:  # anyio wraps what the task raised before it started
            exc = leaf(group)
            if not isinstance(exc, Exception):
                raise
            raise UpstreamUnavailable(self._why(exc)) from None
        self.starts += 1
        self._link = link
        return link

    def _why(self, exc: Exception) -> str:
        command = self.command
        if isinstance(exc, FileNotFoundError):
            return (f"the MCP server command {self.params.command!r} was not found; check the command after `--`, "
                    f"for example: shadow proxy --name NAME -- python server.py")
        if isinstance(exc, PermissionError):
            return f"the MCP server command {self.params.command!r} is not executable; check its path and mode"
        if isinstance(exc, TimeoutError):
            return (f"`{command}` did not finish the MCP handshake within {self.start_timeout:g} s; check that it "
                    "is a stdio MCP server, or raise --start-timeout")
        if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
            return (f"`{command}` exited before it finished the MCP handshake; run it by itself to see its error "
                    "(its stderr is shown above)")
        return f"`{command}` could not be started as an MCP server ({type(exc).__name__}: {str(exc)[:200]})"

    async def _run(self, *, task_status: anyio.abc.TaskStatus[_Link] = anyio.TASK_STATUS_IGNORED) -> None:
        link: _Link | None = None
        try:
            async with stdio_client(self.params, errlog=self.errlog) as (read, write):
                sink, source = anyio.create_memory_object_stream[SessionMessage | Exception](0)
                dead = anyio.Event()
                async with anyio.create_task_group() as pumps:
                    pumps.start_soon(_pump, read, sink, dead)
                    async with ClientSession(source, write) as session:
                        with anyio.fail_after(self.start_timeout):
                            init = await session.initialize()
                        link = _Link(session, init, anyio.Event(), dead)
                        task_status.started(link)
                        await link.stop.wait()
                    pumps.cancel_scope.cancel()
        except Exception as exc:
            if link is None:
                raise
            log.info("upstream_closed", command=self.params.command, error_type=type(leaf(exc)).__name__)
        finally:
            if link is not None:
                link.dead.set()

    async def link(self) -> _Link:
        """The live connection, restarting the child when it has exited."""
        current = self._link
        if current is not None and not current.dead.is_set():
            return current
        async with self._lock:
            current = self._link
            if current is not None and not current.dead.is_set():
                return current
            if current is not None:
                current.stop.set()
                log.warning("upstream_restarting", command=self.params.command, starts=self.starts)
            return await self._open()

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None, *,
                        bounded: bool = True) -> types.CallToolResult:
        """Call a tool on the child; a crash raises ``UpstreamUnavailable``. ``bounded``: a call with no answer
        within ``timeout`` raises ``UpstreamTimeout``; else it waits as long as the child takes, as a direct
        connection does (the client's own timeout, if any, cancels it, and the child is told)."""
        link = await self.link()
        request = types.CallToolRequest(params=types.CallToolRequestParams(
            name=name, arguments=dict(arguments) if arguments is not None else None))
        try:
            # send_request, not call_tool: the child's result must reach the client as it is, even when it
            # breaks its own output schema. The session has no read timeout of its own, so None waits.
            return await link.session.send_request(request, types.CallToolResult,
                                                   request_read_timeout_seconds=self.timeout if bounded else None)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise UpstreamTimeout(f"tools/call {name!r} got no answer within {self.timeout:g} s") from None
            if exc.code == CONNECTION_CLOSED or link.dead.is_set():
                raise UpstreamUnavailable(f"the MCP server exited during tools/call {name!r}") from None
            raise
        except ValidationError:
            raise UpstreamUnavailable(f"the MCP server sent an invalid result for tools/call {name!r}") from None

    async def list_tools(self) -> list[types.Tool]:
        """Every tool the child lists (all pages)."""
        link = await self.link()
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _page in range(1000):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            with anyio.fail_after(self.timeout):
                page = await link.session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def close(self) -> None:
        """Stop the child (its stdin is closed; the SDK kills it if it lingers)."""
        if self._link is not None:
            self._link.stop.set()
