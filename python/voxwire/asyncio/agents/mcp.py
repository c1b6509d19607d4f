"""Hosted MCP tools, as the session sees them: ``McpRunner`` (a server-event consumer).

The Realtime service runs hosted MCP tools itself (:class:`voxwire.agents.HostedMCPTool`); the
session follows what it reports and answers what it asks:

* **available tools** — each ``mcp_list_tools`` item (done) lists one server's tools; the set
  available is the listed tools of the servers the server's session still configures.
  ``session.available_mcp_tools`` holds it and ``mcp_tools_changed`` announces every change
  (a listing, a server added or removed by a ``session.update`` or an agent switch). A failed
  listing (``mcp_list_tools.failed``) is an ``error`` event (``source="tool"``).
* **approvals** — an ``mcp_approval_request`` item becomes ``mcp_approval_requested``; the
  application answers through the same ``approve_tool_call`` / ``reject_tool_call`` as for
  function tools, and the session sends an ``mcp_approval_response`` item (``reason``: the
  rejection message, if any). The service then goes on by itself. ``always=True`` answers
  later requests for the same tool of the same server the same way, without an event.
* **calls** — ``response.mcp_call.in_progress`` becomes ``mcp_call_started``; the call's item
  (done) ``mcp_call_done`` with its output or error. When a conversation response that made
  MCP calls is done, the session asks for the next response (``follow_up``, on by default:
  the service ends the response after the call, and the model speaks about the result in the
  next one — what openai-agents-js does too), through the response gate as for tool outputs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable
from typing import Protocol

import voxwire.asyncio.events as ev
from voxwire.asyncio.errors import SessionClosed
from voxwire.asyncio.events import mcp as mev
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.exceptions import InvalidState
from voxwire.protocol import server_events as se
from voxwire.protocol.config import McpTool, SessionConfig
from voxwire.protocol.items import (
    FunctionCallItem,
    McpApprovalRequestItem,
    McpApprovalResponseItem,
    McpCallItem,
    McpListToolsItem,
)
from voxwire.protocol.protocol import RealtimeProtocol

__all__ = ["McpHost", "McpRunner", "configured_servers"]


class McpHost(Protocol):
    """What the runner needs of the session."""

    def emit(self, event: ev.SessionEvent) -> None: ...

    def protocol(self) -> RealtimeProtocol: ...

    def require_open(self) -> None: ...

    def flush(self) -> Awaitable[None]: ...

    def request_response(self) -> None: ...

    def new_item_id(self) -> str: ...


def configured_servers(session: SessionConfig | None) -> frozenset[str]:
    """The ``server_label`` of every ``mcp`` tool of a session configuration."""
    if session is None or not isinstance(session.tools, list):
        return frozenset()
    return frozenset(t.server_label for t in session.tools if isinstance(t, McpTool))


class McpRunner:
    """Follows hosted MCP for one session (see the module docstring)."""

    def __init__(self, host: McpHost, tasks: OwnedTasks, *, follow_up: bool = True) -> None:
        self._host = host
        self._tasks = tasks
        self._follow_up = follow_up
        self._listed: dict[str, tuple[mev.McpToolListing, ...]] = {}
        self._available: tuple[mev.McpToolListing, ...] = ()
        self._waiting: dict[str, McpApprovalRequestItem] = {}
        self._sticky: dict[tuple[str, str], bool] = {}
        self._arguments: dict[str, str] = {}  # item_id -> arguments (from .arguments.done)

    @property
    def available_tools(self) -> tuple[mev.McpToolListing, ...]:
        return self._available

    @property
    def pending_approvals(self) -> tuple[str, ...]:
        return tuple(self._waiting)

    def waiting(self, call_id: str) -> bool:
        return call_id in self._waiting

    def connection_replaced(self) -> None:
        """A new server session replaced a lost one (asyncio/connection/reconnect.py): approval
        requests of the lost server cannot be answered any more (the new one never asked them; a
        model asks again if it still wants the call). The tools listed stay available until
        the new server lists them again for the same configuration."""
        self._waiting.clear()
        self._arguments.clear()

    # --- answers from the application -------------------------------------------------------------

    def answer_if_waiting(
        self, call_id: str, approve: bool, *, reason: str | None = None, always: bool = False
    ) -> bool:
        """Answer the approval request ``call_id``; ``False`` if no MCP request ``call_id``
        waits (it may be a function tool's)."""
        if call_id not in self._waiting:
            return False
        self.answer(call_id, approve, reason=reason, always=always)
        return True

    def answer(
        self, call_id: str, approve: bool, *, reason: str | None = None, always: bool = False
    ) -> None:
        """Answer the approval request ``call_id`` (raises InvalidState if none waits)."""
        request = self._waiting.get(call_id)
        if request is None:
            raise InvalidState(f"no MCP approval request {call_id!r} is waiting")
        self._host.require_open()
        del self._waiting[call_id]
        if always:
            self._sticky[(request.server_label, request.name)] = approve
        self._send_answer(request, approve, reason)

    def _send_answer(
        self, request: McpApprovalRequestItem, approve: bool, reason: str | None
    ) -> None:
        item = McpApprovalResponseItem(
            id=self._host.new_item_id(),
            approval_request_id=request.id,
            approve=approve,
            reason=reason,
        )
        self._host.protocol().send_item_create(item)

        async def flush() -> None:
            with contextlib.suppress(SessionClosed):  # the close event says why
                await self._host.flush()

        self._tasks.spawn(flush(), name="voxwire-client-mcp-approval", kind="tool")

    # --- events in (synchronous, from the receive loop) -------------------------------------------

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        if isinstance(event, se.ConversationItemDone):
            self._item_done(event)
        elif isinstance(event, se.SessionUpdated | se.SessionCreated):
            self._update_available()
        elif isinstance(event, se.McpListToolsFailed):
            self._host.emit(
                ev.ErrorEvent(
                    message=f"listing the tools of a hosted MCP server failed (item "
                    f"{event.item_id}): check its server_url or connector and authorization",
                    source="tool",
                )
            )
        elif isinstance(event, se.ResponseMcpCallArgumentsDone):
            self._arguments[event.item_id] = event.arguments
        elif isinstance(event, se.ResponseMcpCallInProgress):
            self._call_started(event)
        elif isinstance(event, se.ResponseOutputItemDone) and isinstance(event.item, McpCallItem):
            self._call_done(event.response_id, event.item)
        elif isinstance(event, se.ResponseDone):
            self._response_done(event)

    def _item_done(self, event: se.ConversationItemDone) -> None:
        item = event.item
        if isinstance(item, McpListToolsItem):
            self._listed[item.server_label] = tuple(
                mev.McpToolListing(
                    server_label=item.server_label,
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.input_schema,
                    annotations=tool.annotations,
                )
                for tool in item.tools
            )
            self._update_available()
        elif isinstance(item, McpApprovalRequestItem) and item.id not in self._waiting:
            sticky = self._sticky.get((item.server_label, item.name))
            if sticky is not None:
                self._send_answer(item, sticky, None)
                return
            self._waiting[item.id] = item
            self._host.emit(
                mev.McpApprovalRequestedEvent(
                    call_id=item.id,
                    server_label=item.server_label,
                    name=item.name,
                    arguments=item.arguments,
                )
            )

    def _update_available(self) -> None:
        servers = configured_servers(self._host.protocol().session)
        available = tuple(
            tool for label, tools in self._listed.items() if label in servers for tool in tools
        )
        if available != self._available:
            self._available = available
            self._host.emit(mev.McpToolsChangedEvent(tools=available))

    def _call_started(self, event: se.ResponseMcpCallInProgress) -> None:
        conversation = self._host.protocol().conversation
        item = conversation.get(event.item_id)
        if not isinstance(item, McpCallItem):
            return
        self._host.emit(
            mev.McpCallStartedEvent(
                item_id=event.item_id,
                response_id=conversation.response_of(event.item_id) or "",
                server_label=item.server_label,
                name=item.name,
                arguments=self._arguments.get(event.item_id, item.arguments),
            )
        )

    def _call_done(self, response_id: str, item: McpCallItem) -> None:
        self._arguments.pop(item.id, None)
        self._host.emit(
            mev.McpCallDoneEvent(
                item_id=item.id,
                response_id=response_id,
                server_label=item.server_label,
                name=item.name,
                arguments=item.arguments,
                output=item.output,
                error=item.error.message if item.error is not None else None,
            )
        )

    def _response_done(self, event: se.ResponseDone) -> None:
        response = event.response
        if (
            not self._follow_up
            or response.status != "completed"
            or response.id is None
            or self._host.protocol().is_out_of_band(response.id)
        ):
            return
        # With function calls in the same response, the tool runner asks once they are
        # answered (earlier, the model would not see their outputs).
        kinds = {type(item) for item in response.output}
        if McpCallItem in kinds and FunctionCallItem not in kinds:
            self._host.request_response()
