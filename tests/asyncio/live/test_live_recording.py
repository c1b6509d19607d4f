"""What a Live session stores (asyncio/live/recording.py), without a server: the items in
conversation order whatever order the session learns them in (a delegation arrives while the
user's stretch is still open), their wire forms, and what a resumed session starts from."""

from __future__ import annotations

import asyncio
import random
from datetime import datetime, timezone
from typing import Any

from voxwire.agents import RealtimeAgent
from voxwire.asyncio.live import LiveHistoryItem
from voxwire.asyncio.live.recording import LiveRecording, history_of, initial_items
from voxwire.store import SessionSnapshot, StoredItem

CALL = {
    "id": "fc_1",
    "type": "function_call",
    "status": "completed",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": '{"city":"Paris"}',
}


def recorded() -> Any:
    async def body() -> Any:
        errors: list[Any] = []
        recording = LiveRecording(None, None, errors.append)
        await recording.start(RealtimeAgent(name="Weather"), None)
        recording.said(0, LiveHistoryItem("user", "What is", 0, 100))
        recording.delegation({"id": "deleg_1", "target": "responses", "type": "delegation"})
        recording.said(0, LiveHistoryItem("user", "What is the weather?", 0, 900))
        recording.backend_item(CALL, "resp_1")
        recording.output("call_1", '{"temperature":21}')
        recording.said(1, LiveHistoryItem("assistant", "It is 21", 1000, 1500))
        recording.said(1, LiveHistoryItem("assistant", "It is 21 degrees.", 1000, 2000))
        recording.answer("deleg_2", "Booked.", spoken=False)
        recording.said(2, LiveHistoryItem("user", "Thanks.", 3000, 3400))
        snapshot = recording.snapshot()
        await recording.aclose()
        await recording.aclose()  # idempotent
        assert errors == []
        return snapshot

    return asyncio.run(body())


def test_items_in_conversation_order_with_their_wire_forms() -> None:
    snapshot = recorded()
    kinds = [(item.type, item.role, item.origin) for item in snapshot.items]
    assert kinds == [
        ("message", "user", "caller"),
        ("delegation", None, "model"),
        ("function_call", None, "model"),
        ("function_call_output", None, "sdk"),
        ("message", "assistant", "model"),
        ("session.thinking.append", None, "sdk"),
        ("message", "user", "caller"),
    ]
    user, delegation, call, output, answer, thinking, thanks = snapshot.items
    # the user's stretch kept its place and got its last words
    assert user.wire["content"] == [{"type": "input_text", "text": "What is the weather?"}]
    assert delegation.wire["id"] == "deleg_1"
    assert (call.id, call.response_id, call.wire["name"]) == ("fc_1", "resp_1", "get_weather")
    assert output.wire["call_id"] == "call_1"
    assert answer.wire["content"] == [{"type": "output_text", "text": "It is 21 degrees."}]
    assert thinking.wire["content"] == "Booked."
    assert thinking.wire["delegation_id"] == "deleg_2"
    assert thanks.wire["content"][0]["text"] == "Thanks."
    assert all(item.wire["id"] == item.id for item in snapshot.items)
    assert snapshot.agent == "Weather"


def test_a_resumed_session_starts_from_the_messages_and_notes() -> None:
    snapshot = recorded()
    items = initial_items(snapshot)
    assert [(i["role"], i["content"][0]["type"]) for i in items] == [
        ("user", "input_text"),
        ("developer", "input_text"),
        ("assistant", "output_text"),
        ("developer", "input_text"),
        ("user", "input_text"),
    ]
    tool_note = items[1]["content"][0]["text"]
    assert "get_weather" in tool_note
    assert '{"city":"Paris"}' in tool_note
    assert '{"temperature":21}' in tool_note
    assert "Booked." in items[3]["content"][0]["text"]
    assert [(h.role, h.text) for h in history_of(snapshot)] == [
        ("user", "What is the weather?"),
        ("assistant", "It is 21 degrees."),
        ("user", "Thanks."),
    ]


def test_odd_stored_items_never_break_a_resume() -> None:
    """Stored wires of any shape (another program's, an older voxwire's): a resume takes what
    it can read and skips the rest (seeded fuzz over shapes)."""
    rng = random.Random(7)
    odd: list[Any] = [None, 0, -1, 1.5, "", "x", [], {}, [None], [{"text": 3}], {"a": []}, True]
    keys = ["type", "role", "content", "call_id", "name", "arguments", "output", "text"]
    types = ["message", "function_call", "function_call_output", "session.thinking.append"]
    now = datetime.now(timezone.utc)
    for _ in range(300):
        items = []
        for index in range(rng.randrange(1, 6)):
            wire: dict[str, Any] = {"id": f"i{index}"}
            for key in rng.sample(keys, rng.randrange(len(keys))):
                wire[key] = rng.choice([*odd, *types, "user", "assistant"])
            items.append(StoredItem(id=f"i{index}", position=index, wire=wire))
        snapshot = SessionSnapshot(
            conversation_id="c", created_at=now, updated_at=now, items=tuple(items)
        )
        for item in initial_items(snapshot):
            assert item["type"] == "message"
            assert isinstance(item["content"][0]["text"], str)
        for entry in history_of(snapshot):
            assert isinstance(entry.text, str)
