"""Local MCP servers at run time (declared in voxwire/agents/mcp_local.py), with the official
``mcp`` SDK (the ``mcp`` extra).

:class:`McpLink` holds one server's connection in a task of its own (the SDK's transports are
anyio context managers, entered and left in one task): started when an agent that names the
server becomes active, closed with the session — a stdio server's process is stopped then.
:class:`LocalMcp` (owned by the session's agent switcher) keeps the links and turns each
offered tool into a :class:`~voxwire.agents.FunctionTool` whose function calls the server, so
that a call runs through the same machinery as any function tool.

Faults: a stdio server whose connection ends (its process died) is reported as an ``error``
event (``code="mcp_server_lost"``) and its tools are withdrawn (``session.update``); the
session goes on. An HTTP server's dropped connection is opened again at the next call. A
server's ``tools/list_changed`` lists its tools again and updates the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from typing import Any

import voxwire.asyncio.events as ev
from voxwire.agents.agent import McpTools, RealtimeAgent
from voxwire.agents.call import ToolContext
from voxwire.agents.mcp_local import MCPServer, MCPServerHTTP, MCPServerStdio, exposed_names
from voxwire.agents.tool import FunctionTool, format_output, progress
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import server_events as se

__all__ = [
    "LocalMcp",
    "McpConnection",
    "McpLink",
    "McpToolError",
    "result_text",
    "tool_schema",
]

log = logging.getLogger("voxwire.mcp")

#: The most text of one result the model gets (the rest is cut, and said so).
MAX_OUTPUT_CHARS = 100_000
#: The most pages of a tool listing read (a server paging forever is not followed).
MAX_PAGES = 20
BARGE_IN_NOTE = "The call was cancelled: the user started speaking before it finished."


class McpToolError(RuntimeError):
    """The server answered a call with an error (its text is the message)."""


def _sdk() -> Any:
    try:
        import mcp
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise ImportError(
            'local MCP servers need the official MCP SDK: pip install "voxwire[mcp]"'
        ) from exc
    return mcp


def tool_schema(raw: object) -> dict[str, Any]:
    """A tool's ``inputSchema`` as a function tool's parameters: an object schema, whatever the
    server sent."""
    if isinstance(raw, dict) and raw.get("type") == "object":
        schema = dict(raw)
        if not isinstance(schema.get("properties"), dict):
            schema["properties"] = {}
        return schema
    return {"type": "object", "properties": {}}


def result_text(result: object) -> tuple[str, bool]:
    """A ``tools/call`` result as ``(text the model gets, is it an error)``: text contents as
    they are, other contents named, the structured content when there is no text; bounded."""
    content = getattr(result, "content", None)
    parts: list[str] = []
    for block in content if isinstance(content, list) else ():
        text = getattr(block, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            kind = getattr(block, "type", None)
            mime = getattr(block, "mime_type", None)
            parts.append(
                f"[{kind if isinstance(kind, str) else 'content'}"
                + (f" {mime}]" if isinstance(mime, str) else "]")
            )
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(format_output(structured))
    text = "\n".join(parts)
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[:MAX_OUTPUT_CHARS] + " [cut: the result was longer]"
    return text, getattr(result, "is_error", False) is True


class McpLink:
    """One server's connection (see the module docstring)."""

    def __init__(
        self, server: MCPServer, tasks: OwnedTasks, changed: Callable[[McpLink], None]
    ) -> None:
        self.server = server
        self._owner = tasks
        self.tools: tuple[Any, ...] = ()
        """The server's offered tools (``mcp.types.Tool``), as listed last."""
        self.alive = False
        self._changed = changed
        self._session: Any = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._calls: dict[str, asyncio.Task[Any]] = {}
        self._barged: set[str] = set()

    async def open(self) -> None:
        """Connect, initialize, list the tools; raises what the connection raised."""
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = self._owner.spawn(
            self._hold(ready, self._stop), name=f"voxwire-mcp-{self.server.name}", kind="mcp"
        )
        await ready

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        server = self.server
        if isinstance(server, MCPServerStdio):
            from mcp.client.stdio import StdioServerParameters, stdio_client

            env = dict(server.env) if server.env is not None else None
            parameters = StdioServerParameters(
                command=server.command, args=list(server.args), env=env, cwd=server.cwd
            )
            return stdio_client(parameters)
        assert isinstance(server, MCPServerHTTP)
        from mcp.client.streamable_http import streamable_http_client

        if not server.headers:
            return streamable_http_client(server.url)
        return _http_with_headers(server.url, dict(server.headers))

    async def _hold(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        mcp = _sdk()
        import anyio  # the SDK's (its streams)

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                inner, outer = anyio.create_memory_object_stream[Any](0)
                watch = asyncio.ensure_future(self._watch(read, inner, stop))
                stack.push_async_callback(_cancelled, watch)  # owned: awaited on the way out
                session = mcp.ClientSession(outer, write, message_handler=self._message)
                await stack.enter_async_context(session)
                await session.initialize()
                self._session = session
                await self.list_tools()
                self.alive = True
                ready.set_result(None)
                await stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                log.debug("MCP server %s: the connection ended", self.server.name, exc_info=True)
        finally:
            self.alive = False
            self._session = None

    async def _watch(self, read: Any, forward: Any, stop: asyncio.Event) -> None:
        """Pass the server's messages on; their end while the link is open means the server
        went away (a stdio process died, an HTTP stream closed), even with no call running."""
        async with forward:
            async for message in read:
                await forward.send(message)
        if not stop.is_set() and self.alive:
            self._lost(EOFError(f"the MCP server {self.server.name!r} closed its connection"))

    async def _message(self, message: object) -> None:
        # Called from the SDK's read loop: listing here would wait for an answer that loop
        # must read. The listing runs in a task of its own (LocalMcp._refresh).
        if type(message).__name__ == "ToolListChangedNotification":
            self._changed(self)

    async def list_tools(self) -> None:
        """List the server's tools, every page (at most :data:`MAX_PAGES`), keeping the
        offered ones with a name."""
        from mcp.types import PaginatedRequestParams

        found: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            listed = await self._session.list_tools(params=params)
            tools = getattr(listed, "tools", None)
            found += tools if isinstance(tools, list) else []
            cursor = getattr(listed, "next_cursor", None)
            if not isinstance(cursor, str) or not cursor:
                break
        self.tools = tuple(
            tool
            for tool in found
            if isinstance(getattr(tool, "name", None), str) and self.server.offers(tool.name)
        )

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        call_id: str,
        on_progress: Callable[[str], None] | None = None,
    ) -> str:
        """Run the server's tool ``name``; raises :class:`McpToolError` for an error result.
        ``on_progress`` gets the server's progress notifications of the call, as text.

        An HTTP server that no longer knows the session (it restarted: ``Session not found``,
        the call never reached a tool) is connected again and the call sent once more; one
        whose connection closed during the call is not (the tool may have run): the call
        fails and the next one connects again."""
        http = isinstance(self.server, MCPServerHTTP)
        if not self.alive and http:
            await self._reconnect()
        try:
            return await self._call(name, arguments, call_id, on_progress)
        except Exception as exc:
            if not (http and _unknown_session(exc)):
                raise
        await self._reconnect()
        return await self._call(name, arguments, call_id, on_progress)

    async def _call(
        self,
        name: str,
        arguments: dict[str, Any],
        call_id: str,
        on_progress: Callable[[str], None] | None,
    ) -> str:
        if self._session is None:
            raise McpToolError(f"the MCP server {self.server.name!r} is not connected")

        async def progressed(done: float, total: float | None, message: str | None) -> None:
            if on_progress is not None:
                on_progress(_progress_text(done, total, message))

        task = asyncio.ensure_future(
            self._session.call_tool(name, arguments, progress_callback=progressed)
        )
        self._calls[call_id] = task
        try:
            result = await task
        except asyncio.CancelledError:
            # Only a barge-in's cancel becomes the note; the task's own (close, the tool's
            # timeout) goes on (Task.cancelling: Python 3.11+).
            cancelling = getattr(asyncio.current_task(), "cancelling", None)
            if call_id not in self._barged or (cancelling is not None and cancelling()):
                raise
            return BARGE_IN_NOTE
        except Exception as exc:
            if _code(exc) == -32000:
                self._lost(exc)  # CONNECTION_CLOSED: the server is gone
            if _code(exc) is not None:
                raise  # the server's JSON-RPC error
            raise McpToolError(  # a result the SDK could not read: say so, briefly
                f"the MCP server {self.server.name!r} answered {name!r} with a result that "
                f"could not be read: {str(exc)[:300]}"
            ) from exc
        finally:
            self._calls.pop(call_id, None)
            self._barged.discard(call_id)
        text, failed = result_text(result)
        if failed:
            raise McpToolError(text or "the tool failed")
        return text

    def cancel_calls(self, call_ids: Collection[str]) -> None:
        """The user started speaking: these calls in flight end with :data:`BARGE_IN_NOTE`."""
        for call_id in call_ids:
            task = self._calls.get(call_id)
            if task is not None:
                self._barged.add(call_id)
                task.cancel()

    def _lost(self, exc: BaseException) -> None:
        self.alive = False
        if self._stop is not None:
            self._stop.set()
        if isinstance(self.server, MCPServerStdio):
            self._changed(self)

    async def _reconnect(self) -> None:
        assert isinstance(self.server, MCPServerHTTP)
        for attempt in range(self.server.reconnect_attempts):
            await self.close()
            try:
                await self.open()
                return
            except Exception:
                log.debug("MCP server %s: reconnecting failed", self.server.name, exc_info=True)
                await asyncio.sleep(0.1 * (attempt + 1))

    async def close(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._task is not None:
            await asyncio.wait([self._task])
        self._task = None


async def _cancelled(task: asyncio.Future[Any]) -> None:
    task.cancel()
    await asyncio.wait([task])


def _progress_text(done: float, total: float | None, message: str | None) -> str:
    if isinstance(message, str) and message:
        return message[:MAX_OUTPUT_CHARS]
    return f"progress {done:g} of {total:g}" if total else f"progress {done:g}"


def _code(exc: BaseException) -> object:
    return getattr(getattr(exc, "error", None), "code", None)


def _unknown_session(exc: BaseException) -> bool:
    """The HTTP server answered that it does not know the session (MCP: a new session must be
    started)."""
    return _code(exc) == -32600 and "session not found" in str(exc).lower()


@contextlib.asynccontextmanager
async def _http_with_headers(url: str, headers: dict[str, str]) -> Any:
    import httpx2  # the SDK's HTTP client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=headers) as client,
        streamable_http_client(url, http_client=client) as streams,
    ):
        yield streams


class McpConnection:
    """A local MCP server connected by the application, for sessions to share
    (``RealtimeSession(mcp_connections=[...])``): ``async with McpConnection(server) as
    connection:`` connects it; a session whose agent names ``server`` (the same declaration)
    uses this connection instead of its own and leaves it open when it closes. Each session
    sees the server's tool changes and faults; a barge-in cancels only that session's calls."""

    def __init__(self, server: MCPServer) -> None:
        if not isinstance(server, MCPServer):
            raise ConfigurationError(
                f"McpConnection({server!r}): expected an MCPServerStdio or MCPServerHTTP "
                "(voxwire.agents)"
            )
        self.server = server
        self._tasks = OwnedTasks(self._failed)
        self._listeners: list[Callable[[McpLink], None]] = []
        self.link = McpLink(server, self._tasks, self._changed)

    def _failed(self, kind: str, exc: BaseException) -> None:
        log.warning("MCP server %s: %s failed: %r", self.server.name, kind, exc)

    def _changed(self, link: McpLink) -> None:
        for listener in list(self._listeners):
            listener(link)

    def listen(self, listener: Callable[[McpLink], None]) -> None:
        self._listeners.append(listener)

    def forget(self, listener: Callable[[McpLink], None]) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    async def __aenter__(self) -> McpConnection:
        await self.link.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Disconnect (a stdio server's process is stopped). Idempotent."""
        await self.link.close()
        await self._tasks.aclose()


class LocalMcp:
    """The session's local MCP servers (see the module docstring). ``emit`` reports faults;
    ``changed`` is told that the active agent's tools must be sent again; ``shared``: the
    application's connections, used for their servers and never closed here."""

    def __init__(
        self,
        emit: Callable[[ev.SessionEvent], None],
        changed: Callable[[], Awaitable[None]],
        shared: Sequence[McpConnection] = (),
    ) -> None:
        self._emit = emit
        self._changed = changed
        self._links: dict[int, McpLink] = {}
        self._tasks = OwnedTasks(self._failed)
        self._lost: set[int] = set()
        self._shared = {id(connection.server): connection for connection in shared}
        self._calls: set[str] = set()
        """The call ids of this session's calls in flight (a barge-in cancels only these)."""

    def _failed(self, kind: str, exc: BaseException) -> None:
        self._emit(
            ev.ErrorEvent(
                message=f"local MCP ({kind}) failed: {exc!r}", source="tool", exception=exc
            )
        )

    async def connect(self, agent: RealtimeAgent | None) -> None:
        """Connect the servers ``agent`` names that are not connected yet; one that cannot be
        connected is reported (``error``) and offers no tools."""
        for server in agent.mcp_servers if agent is not None else ():
            if id(server) in self._links:
                continue
            connection = self._shared.get(id(server))
            if connection is not None:
                connection.listen(self._link_changed)
                self._links[id(server)] = connection.link
                continue
            link = McpLink(server, self._tasks, self._link_changed)
            self._links[id(server)] = link
            try:
                await link.open()
            except Exception as exc:
                self._emit(
                    ev.ErrorEvent(
                        message=f"the MCP server {server.name!r} could not be connected: {exc!r}",
                        source="tool",
                        code="mcp_server_unavailable",
                        exception=exc,
                    )
                )

    def _link_changed(self, link: McpLink) -> None:
        if not link.alive and isinstance(link.server, MCPServerStdio):
            if id(link.server) in self._lost:
                return
            self._lost.add(id(link.server))
            self._emit(
                ev.ErrorEvent(
                    message=f"the MCP server {link.server.name!r} stopped: its tools are withdrawn",
                    source="tool",
                    code="mcp_server_lost",
                )
            )
        with contextlib.suppress(Exception):  # closing: nothing to refresh
            self._tasks.spawn(self._refresh(link), name="voxwire-mcp-refresh", kind="mcp refresh")

    async def _refresh(self, link: McpLink) -> None:
        if link.alive:
            await link.list_tools()
        await self._changed()

    def tools(self, agent: RealtimeAgent | None) -> McpTools | None:
        """The function tools of ``agent``'s connected servers, named around ``taken``."""
        if agent is None or not agent.mcp_servers:
            return None
        links = [
            link
            for server in agent.mcp_servers
            if (link := self._links.get(id(server))) is not None and id(server) not in self._lost
        ]

        def named(taken: frozenset[str]) -> Sequence[FunctionTool]:
            listings = [(link.server.name, [t.name for t in link.tools]) for link in links]
            names = exposed_names(taken, listings)
            return [
                _function_tool(link, tool, names[(link.server.name, tool.name)], self._calls)
                for link in links
                for tool in link.tools
                if (link.server.name, tool.name) in names
            ]

        return named

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        if isinstance(event, se.InputAudioBufferSpeechStarted):
            for link in self._links.values():
                if link.server.cancel_on_barge_in:
                    link.cancel_calls(self._calls)

    async def aclose(self) -> None:
        for key, link in self._links.items():
            connection = self._shared.get(key)
            if connection is not None:
                connection.forget(self._link_changed)
            else:
                await link.close()
        await self._tasks.aclose()


def _function_tool(link: McpLink, tool: Any, name: str, calls: set[str]) -> FunctionTool:
    server, mcp_name = link.server, tool.name

    # Positional-only: a tool may well have an argument named "context". An async generator:
    # the server's progress notifications go out as progress() while the call runs.
    async def call(context: ToolContext[Any], /, **arguments: Any) -> AsyncIterator[Any]:
        call_id = context.call.call_id
        updates: asyncio.Queue[str] = asyncio.Queue()
        calls.add(call_id)
        work = asyncio.ensure_future(link.call(mcp_name, arguments, call_id, updates.put_nowait))
        try:
            while True:  # every update, in order, then the result
                update = asyncio.ensure_future(updates.get())
                await asyncio.wait({work, update}, return_when=asyncio.FIRST_COMPLETED)
                if not update.done():
                    await _cancelled(update)
                    break
                yield progress(update.result())
            yield work.result()
        finally:
            calls.discard(call_id)
            await _cancelled(work)

    description = tool.description if isinstance(tool.description, str) else None
    return FunctionTool(
        name=name,
        function=call,
        description=description,
        parameters=tool_schema(getattr(tool, "input_schema", None)),
        strict=False,
        timeout_s=server.timeout_s,
        needs_approval=server.approval_for(mcp_name),
        takes_context=True,
        input_guardrails=server.input_guardrails,
        output_guardrails=server.output_guardrails,
    )
