"""Hosted MCP on the wire: the listing, call and approval events and items decode as typed
objects, keep the fields this SDK does not model, and an interrupted response's MCP argument
deltas are dropped like a function call's."""

from __future__ import annotations

import json

from voxwire.protocol import (
    ConversationItemDone,
    McpApprovalRequestItem,
    McpCallItem,
    McpListToolsCompleted,
    McpListToolsItem,
    McpToolExecutionError,
    RealtimeProtocol,
    ResponseMcpCallArgumentsDelta,
    ResponseMcpCallFailed,
    ResponseOutputItemDone,
    unknown_fields,
)

from .scenario import ScriptedServer, feed


def test_mcp_items_and_events_decode_typed_with_their_unknown_fields() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    listing = {
        "id": "mcpl_1",
        "type": "mcp_list_tools",
        "server_label": "docs",
        "tools": [{"name": "search", "input_schema": {"type": "object"}, "x_rank": 1}],
    }
    call = {
        "id": "mcp_1",
        "type": "mcp_call",
        "server_label": "docs",
        "name": "search",
        "arguments": "{}",
        "error": {"type": "tool_execution_error", "message": "denied"},
        "status": "failed",
    }
    request = {
        "id": "mcpr_1",
        "type": "mcp_approval_request",
        "server_label": "docs",
        "name": "publish",
        "arguments": "{}",
        "created_at": 1,
    }
    events = feed(
        protocol,
        server.frame("conversation.item.done", previous_item_id=None, item=listing),
        server.frame("mcp_list_tools.completed", item_id="mcpl_1"),
        server.frame("response.mcp_call.failed", item_id="mcp_1", output_index=0),
        server.frame("response.output_item.done", response_id="r", output_index=0, item=call),
        server.frame("conversation.item.done", previous_item_id="mcpl_1", item=request),
    )
    listed, completed, failed, done, asked = events
    assert isinstance(listed, ConversationItemDone)
    assert isinstance(listed.item, McpListToolsItem)
    assert listed.item.tools[0].name == "search"
    assert unknown_fields(listed) == {"item.tools[0].x_rank": 1}
    assert isinstance(completed, McpListToolsCompleted)
    assert isinstance(failed, ResponseMcpCallFailed)
    assert isinstance(done, ResponseOutputItemDone)
    assert isinstance(done.item, McpCallItem)
    assert done.item.error == McpToolExecutionError(message="denied")
    assert unknown_fields(done) == {"item.status": "failed"}
    assert isinstance(asked, ConversationItemDone)
    assert isinstance(asked.item, McpApprovalRequestItem)
    assert unknown_fields(asked) == {"item.created_at": 1}
    assert [item.id for item in protocol.conversation.items()] == ["mcpl_1", "mcpr_1"]


def test_mcp_argument_deltas_of_an_interrupted_response_are_dropped() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    delta = json.dumps(
        {
            "type": "response.mcp_call_arguments.delta",
            "event_id": "e",
            "response_id": "resp_1",
            "item_id": "mcp_1",
            "output_index": 0,
            "delta": "{",
        }
    )
    feed(protocol, server.response_created("resp_1"))
    (kept,) = feed(protocol, delta)
    assert isinstance(kept, ResponseMcpCallArgumentsDelta)
    protocol.interrupt({})
    assert feed(protocol, delta) == []
