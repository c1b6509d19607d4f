"""Helpers shared by the agent-feature tests (tools, approvals, handoffs, guardrails)."""

from __future__ import annotations

from typing import Any

from tests.asyncio.helpers import all_done, until
from voxwire.asyncio import RealtimeSession, SessionEvent
from voxwire.asyncio.events import ResponseDoneEvent
from voxwire.asyncio.history import HistoryMessage
from voxwire.testing import ScriptedServer


async def settle(session: RealtimeSession, *, timeout_s: float = 15.0) -> list[SessionEvent]:
    """Events until every response asked for has run and no tool call is unfinished."""
    return await until(
        session,
        lambda e: (
            isinstance(e, ResponseDoneEvent)
            and all_done(session)
            and session.tool_calls_in_progress == 0
        ),
        timeout_s=timeout_s,
    )


def of_type(events: list[SessionEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def last_assistant_text(session: RealtimeSession) -> str:
    message = [i for i in session.history if isinstance(i, HistoryMessage)][-1]
    assert message.role == "assistant"
    return message.text


async def function_call_response(
    server: ScriptedServer, *, response_id: str, calls: list[tuple[str, str, str]]
) -> None:
    """A response made of function calls: (call_id, name, arguments)."""
    await server.emit(
        {
            "type": "response.created",
            "response": {"id": response_id, "status": "in_progress", "conversation_id": "conv"},
        }
    )
    for index, (call_id, name, arguments) in enumerate(calls):
        item = {
            "id": f"item_{call_id}",
            "type": "function_call",
            "status": "completed",
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
        }
        await server.emit(
            {"type": "conversation.item.added", "previous_item_id": None, "item": item}
        )
        await server.emit(
            {
                "type": "response.output_item.done",
                "response_id": response_id,
                "output_index": index,
                "item": item,
            }
        )
    await server.emit(
        {"type": "response.done", "response": {"id": response_id, "status": "completed"}}
    )
