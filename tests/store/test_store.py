"""The store contract, run against SQLite and a real PostgreSQL server (conftest.py)."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from typing import Any

import msgspec
import pytest

from tests.store.conftest import Backend
from tests.store.frames import (
    added,
    assistant,
    call,
    done,
    event,
    output,
    output_added,
    response_done,
    run,
    user,
)
from voxwire.exceptions import (
    ConfigurationError,
    ConversationExists,
    ConversationNotFound,
    StoreError,
)
from voxwire.protocol.codec import decode_server_event
from voxwire.protocol.items import FunctionCallItem, Item
from voxwire.store import (
    ConversationRecorder,
    PutItem,
    SessionSnapshot,
    StoredItem,
    UsageTotals,
    conversation_state,
    wire_item,
)

NEW_FIELD = {"provider_flag": {"nested": [1, 2]}}  # a field added to the protocol later

#: One item of every kind the GA protocol has, each with a field this SDK does not model, at
#: item level and (where there are parts) at part level.
EVERY_KIND: list[dict[str, Any]] = [
    {
        "id": "item_user",
        "object": "realtime.item",
        "type": "message",
        "status": "completed",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "hi", "part_flag": True},
            {"type": "input_audio", "transcript": "hello"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "low"},
        ],
        **NEW_FIELD,
    },
    {
        "id": "item_system",
        "type": "message",
        "role": "system",
        "content": [{"type": "input_text", "text": "be brief"}],
        **NEW_FIELD,
    },
    {
        "id": "item_assistant",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [
            {"type": "output_text", "text": "sure"},
            {"type": "output_audio", "transcript": "sure thing", "part_flag": 3},
        ],
        **NEW_FIELD,
    },
    {**call("item_call", "call_1", arguments='{"city": "Paris"}'), **NEW_FIELD},
    {**output("item_output", "call_1", '{"temperature": 21}'), **NEW_FIELD},
    {
        "id": "item_mcp_req",
        "type": "mcp_approval_request",
        "name": "search",
        "arguments": "{}",
        "server_label": "docs",
        **NEW_FIELD,
    },
    {
        "id": "item_mcp_resp",
        "type": "mcp_approval_response",
        "approval_request_id": "item_mcp_req",
        "approve": False,
        "reason": "",
        **NEW_FIELD,
    },
    {
        "id": "item_mcp_tools",
        "type": "mcp_list_tools",
        "server_label": "docs",
        "tools": [{"name": "search", "input_schema": {"type": "object"}, "x": 1}],
        **NEW_FIELD,
    },
    {
        "id": "item_mcp_call",
        "type": "mcp_call",
        "name": "search",
        "arguments": "{}",
        "server_label": "docs",
        "error": {"type": "http_error", "code": 502, "message": "bad gateway"},
        **NEW_FIELD,
    },
]


async def record(backend: Backend, events: list[Any], conversation_id: str = "conv") -> Any:
    """Feed ``events`` through a recorder into a new store conversation; return the store
    (open), the recorder and the loaded snapshot."""
    store = await backend.open()
    info = await store.create(conversation_id)
    recorder = ConversationRecorder(conversation_id, info.created_at)
    for received in events:
        ops = recorder.receive(received)
        if ops:
            await store.apply(conversation_id, ops)
    return store, recorder, await store.load(conversation_id)


def chain(items: list[dict[str, Any]]) -> list[Any]:
    previous = None
    events = []
    for item in items:
        events.append(added(item, previous))
        previous = item["id"]
    return events


def test_every_item_kind_round_trips_with_provider_fields(backend: Backend) -> None:
    async def body() -> None:
        store, recorder, loaded = await record(backend, chain(copy.deepcopy(EVERY_KIND)))
        await store.close()
        assert [item.wire for item in loaded.items] == EVERY_KIND
        for stored, raw in zip(loaded.items, EVERY_KIND, strict=True):
            typed: Item = msgspec.convert(raw, Item)
            assert wire_item(stored) == typed
        assert loaded == recorder.snapshot(loaded.updated_at)

    run(body())


def test_items_load_in_server_order(backend: Backend) -> None:
    # Appends, an insert at the start, inserts into one gap until it has no integer left
    # (forcing a renumbering), and an item after an unknown predecessor (goes last).
    events = chain([user("a", "1"), user("b", "2")])
    events.append(added(user("first", "0"), None))
    previous = "a"
    for index in range(25):
        events.append(added(user(f"mid{index}", "m"), previous))
        previous = f"mid{index}"
    events.append(added(user("stray", "s"), "item_never_seen"))

    async def body() -> None:
        store, _, loaded = await record(backend, events)
        await store.close()
        order = ["first", "a", *(f"mid{i}" for i in range(25)), "b", "stray"]
        assert [item.id for item in loaded.items] == order
        expected = conversation_state([])
        for received in events:
            expected.item_added(received.item, received.previous_item_id)
        assert list(expected.item_ids) == order

    run(body())


def test_an_item_is_written_when_added_and_replaced_when_done(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        info = await store.create("conv")
        recorder = ConversationRecorder("conv", info.created_at)
        await store.apply("conv", recorder.receive(added(user("u", "hi"), None)))
        await store.apply(
            "conv", recorder.receive(output_added(assistant("a", None, "in_progress"), "r1"))
        )
        await store.apply("conv", recorder.receive(added(assistant("a", None, "in_progress"), "u")))
        in_flight = await store.load("conv")
        assert [item.wire["status"] for item in in_flight.items] == ["completed", "in_progress"]
        assert in_flight.items[1].origin == "model"
        assert in_flight.items[1].response_id == "r1"
        ops = recorder.receive(done(assistant("a", "hello"), "u"))
        assert ops
        await store.apply("conv", ops)
        # The same item again changes nothing: no write.
        assert recorder.receive(done(assistant("a", "hello"), "u")) == []
        final = await store.load("conv")
        await store.close()
        assert [item.id for item in final.items] == ["u", "a"]
        assert final.items[1].wire == assistant("a", "hello")
        assert final.items[1].position == in_flight.items[1].position

    run(body())


def test_deleted_items_are_gone(backend: Backend) -> None:
    events = [*chain([user("a", "1"), user("b", "2"), user("c", "3")])]
    events.append(event("conversation.item.deleted", item_id="b"))

    async def body() -> None:
        store, _, loaded = await record(backend, events)
        await store.delete_item("conv", "c")
        after = await store.load("conv")
        await store.close()
        assert [item.id for item in loaded.items] == ["a", "c"]
        assert [item.id for item in after.items] == ["a"]

    run(body())


def test_transcripts_and_truncation_survive_and_feed_restoration(backend: Backend) -> None:
    events = [
        added({**user("u", "x"), "content": [{"type": "input_audio"}]}, None),
        event(
            "conversation.item.input_audio_transcription.completed",
            item_id="u",
            content_index=0,
            transcript="what's the weather",
        ),
        output_added(assistant("a", None, "in_progress"), "r1"),
        added(assistant("a", None, "in_progress"), "u"),
        event(
            "response.output_audio_transcript.done",
            response_id="r1",
            item_id="a",
            output_index=0,
            content_index=0,
            transcript="It is sunny and warm all day",
        ),
        done(assistant("a", "It is sunny and warm all day"), "u"),
        event("conversation.item.truncated", item_id="a", content_index=0, audio_end_ms=1500),
    ]

    async def body() -> None:
        store, _, loaded = await record(backend, events)
        await store.close()
        user_item, answer = loaded.items
        assert user_item.transcripts == {0: "what's the weather"}
        assert answer.truncated_ms == {0: 1500}
        assert answer.transcripts == {}  # the server drops the transcript of cut audio
        state = conversation_state(loaded.items)
        assert state.transcript("u") == "what's the weather"
        assert state.truncated_at_ms("a") == 1500
        assert state.transcript("a") is None

    run(body())


def test_pending_approvals_come_back_until_resolved(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        info = await store.create("conv")
        recorder = ConversationRecorder("conv", info.created_at)
        for call_id in ("call_b", "call_a"):
            fc = FunctionCallItem(id=f"item_{call_id}", name="pay", arguments="{}", call_id=call_id)
            await store.apply("conv", recorder.approval_pending(fc))
        pending = await store.load("conv")
        await store.apply("conv", recorder.approval_resolved("call_b"))
        assert recorder.approval_resolved("call_b") == []  # already resolved: nothing to write
        # The output item of a call settles its approval too.
        await store.apply("conv", recorder.receive(added(output("out", "call_a", "ok"), None)))
        settled = await store.load("conv")
        await store.close()
        assert list(pending.approvals) == ["call_b", "call_a"]  # the order they were asked in
        assert pending.approvals["call_a"] == {
            "type": "function_call",
            "id": "item_call_a",
            "name": "pay",
            "arguments": "{}",
            "call_id": "call_a",
        }
        assert settled.approvals == {}

    run(body())


OUTPUTS: dict[str, Any] = {
    "empty": "",
    "zero": 0,
    "false": False,
    "null": None,
    "empty_object": {},
    "empty_list": [],
    "structured": {"temperature": 21, "tags": ["a", ""], "ok": False},
    "text": "done",
}


def test_undelivered_outputs_keep_every_value_until_delivered(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        info = await store.create("conv")
        recorder = ConversationRecorder("conv", info.created_at)
        for call_id, value in OUTPUTS.items():
            await store.apply("conv", recorder.output_ready(call_id, value))
        waiting = await store.load("conv")
        # The server confirms the output item of "empty": it was delivered.
        await store.apply("conv", recorder.receive(added(output("o1", "empty", ""), None)))
        after = await store.load("conv")
        await store.close()
        assert waiting.outputs == OUTPUTS
        assert list(waiting.outputs) == list(OUTPUTS)
        assert "empty" not in after.outputs
        assert after.outputs == {k: v for k, v in OUTPUTS.items() if k != "empty"}
        assert after.items[0].origin == "sdk"
        assert after.items[0].wire["output"] == ""

    run(body())


def test_usage_totals_add_up_over_responses(backend: Backend) -> None:
    usage = {
        "total_tokens": 30,
        "input_tokens": 10,
        "output_tokens": 20,
        "input_token_details": {
            "text_tokens": 4,
            "audio_tokens": 6,
            "cached_tokens": 2,
            "cached_tokens_details": {"text_tokens": 1, "audio_tokens": 1},
        },
        "output_token_details": {"text_tokens": 5, "audio_tokens": 15},
    }
    events = [
        response_done("r1", [], **usage),
        response_done("r2", [], **usage),
        response_done("r3", []),
    ]

    async def body() -> None:
        store, _, loaded = await record(backend, events)
        await store.close()
        assert loaded.usage == UsageTotals(
            responses=3,
            total_tokens=60,
            input_tokens=20,
            output_tokens=40,
            input_text_tokens=8,
            input_audio_tokens=12,
            cached_tokens=4,
            output_text_tokens=10,
            output_audio_tokens=30,
            cached_text_tokens=2,
            cached_audio_tokens=2,
        )

    run(body())


def test_usage_totals_written_before_the_cached_split_still_read() -> None:
    old = b'{"responses": 2, "total_tokens": 9, "cached_tokens": 3}'
    totals = msgspec.json.decode(old, type=UsageTotals)
    assert (totals.responses, totals.cached_tokens, totals.cached_audio_tokens) == (2, 3, 0)


def test_conversations_are_listed_and_deleted(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        first = await store.create("one", agent="triage")
        second = await store.create(agent="sales")
        assert second.conversation_id.startswith("conv_")
        await store.set_agent("one", "billing")
        await store.put_item("one", StoredItem(id="x", position=0, wire=user("x", "hi")))
        listed = await store.list_conversations()
        assert [c.conversation_id for c in listed] == ["one", second.conversation_id]
        assert listed[0].agent == "billing"
        assert listed[0].item_count == 1
        assert listed[0].created_at == first.created_at
        assert listed[0].updated_at > first.updated_at
        page = await store.list_conversations(limit=1, updated_before=listed[0].updated_at)
        assert [c.conversation_id for c in page] == [second.conversation_id]
        with pytest.raises(ConversationExists, match="'one' is already stored"):
            await store.create("one")
        assert (await store.open_conversation("one")).agent == "billing"
        assert await store.delete_conversation("one") is True
        assert await store.delete_conversation("one") is False
        with pytest.raises(ConversationNotFound, match="no conversation 'one'"):
            await store.load("one")
        with pytest.raises(ConversationNotFound):
            await store.apply("one", [])
        await store.close()
        await store.close()  # idempotent
        with pytest.raises(StoreError, match="closed"):
            await store.load(second.conversation_id)

    run(body())


def test_snapshots_import_and_load_back_identical(backend: Backend) -> None:
    events = [
        *chain(copy.deepcopy(EVERY_KIND)),
        response_done("r1", [], total_tokens=5),
    ]

    async def body() -> None:
        store, recorder, _ = await record(backend, events, "source")
        await store.apply("source", recorder.set_agent("triage"))
        await store.apply("source", recorder.output_ready("call_9", {"a": ""}))
        snapshot = SessionSnapshot.from_json((await store.load("source")).to_json())
        moved = msgspec.structs.replace(snapshot, conversation_id="copy")
        await store.import_snapshot(moved)
        with pytest.raises(ConversationExists, match="replace=True"):
            await store.import_snapshot(moved)
        await store.import_snapshot(moved, replace=True)
        loaded = await store.load("copy")
        await store.close()
        assert loaded == moved
        assert loaded.agent == "triage"
        assert loaded.outputs == {"call_9": {"a": ""}}

    run(body())


def test_audio_is_not_stored_unless_asked_and_then_capped(backend: Backend) -> None:
    from voxwire.store import AudioPolicy

    audio_item = {
        **user("u", "x"),
        "content": [{"type": "input_audio", "audio": "AAECAwQFBgc=", "transcript": "hi"}],
    }
    deltas = [
        event(
            "response.output_audio.delta",
            response_id="r1",
            item_id="a",
            output_index=0,
            content_index=0,
            delta="AAAAAAAAAAAAAAAAAAAAAA==",  # 16 zero bytes
        )
        for _ in range(3)
    ]
    audio_done = event(
        "response.output_audio.done", response_id="r1", item_id="a", output_index=0, content_index=0
    )
    events = [
        added(audio_item, None),
        output_added(assistant("a", None, "in_progress"), "r1"),
        added(assistant("a", None, "in_progress"), "u"),
        *deltas,
        audio_done,
    ]

    async def body() -> None:
        store = await backend.open()
        for name, policy in (
            ("off", None),
            ("on", AudioPolicy(record=True, max_bytes_per_item=40)),
        ):
            info = await store.create(name)
            recorder = ConversationRecorder(name, info.created_at, audio=policy)
            for received in events:
                await store.apply(name, recorder.receive(received))
        off, on = await store.load("off"), await store.load("on")
        await store.close()
        assert "audio" not in off.items[0].wire["content"][0]
        assert [item.audio for item in off.items] == [{}, {}]
        assert "audio" not in on.items[0].wire["content"][0]  # audio lives beside the wire
        assert on.items[0].audio == {0: bytes(range(8))}
        assert on.items[1].audio == {0: bytes(40)}  # 48 bytes sent, capped at 40
        assert wire_item(on.items[0]).content[0].audio == bytes(range(8))  # type: ignore[union-attr]

    run(body())


def test_put_item_is_an_upsert_by_id(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        await store.create("conv")
        now = datetime.now(timezone.utc)
        first = StoredItem(id="x", position=10, wire=user("x", "one"))
        second = StoredItem(id="x", position=5, wire=user("x", "two"), transcripts={1: "t"})
        await store.apply("conv", [PutItem(item=first), PutItem(item=second)])
        loaded = await store.load("conv")
        await store.close()
        assert loaded.items == (second,)
        assert now - timedelta(seconds=60) < loaded.updated_at <= datetime.now(timezone.utc)

    run(body())


def test_recorder_resumes_from_a_loaded_snapshot(backend: Backend) -> None:
    async def body() -> None:
        store, recorder, _ = await record(backend, chain([user("a", "1"), user("b", "2")]))
        await store.apply("conv", recorder.output_ready("call_1", ""))
        loaded = await store.load("conv")
        resumed = ConversationRecorder.from_snapshot(loaded)
        await store.apply("conv", resumed.receive(added(user("c", "3"), "a")))
        await store.apply("conv", resumed.receive(added(output("o", "call_1", ""), "c")))
        final = await store.load("conv")
        await store.close()
        assert [item.id for item in final.items] == ["a", "c", "o", "b"]
        assert final.outputs == {}
        assert final.items[2].origin == "sdk"
        assert final == resumed.snapshot(final.updated_at)

    run(body())


def test_a_frame_from_a_real_capture_is_stored_whole(backend: Backend) -> None:
    frame = (
        '{"type":"conversation.item.done","event_id":"event_CCXLgMZPo3qioWCeQa4WH",'
        '"previous_item_id":null,"item":{"id":"item_CCXLfxmM5sXVJVz4mCa2S","type":"message",'
        '"status":"completed","role":"assistant","content":[{"type":"audio",'
        '"transcript":"Oh, I can hear you."}],"future":1}}'
    )

    async def body() -> None:
        store, _, loaded = await record(backend, [decode_server_event(frame)])
        await store.close()
        [stored] = loaded.items
        # The beta spelling "audio" is stored as the GA "output_audio" the codec read it as;
        # the unknown field stays.
        assert stored.wire["content"] == [
            {"type": "output_audio", "transcript": "Oh, I can hear you."}
        ]
        assert stored.wire["future"] == 1

    run(body())


def test_values_that_cannot_be_stored_are_refused_at_once(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        await store.create("c")
        huge = StoredItem(id="x", position=2**70, wire=user("x", "hi"))
        with pytest.raises(ConfigurationError, match="position 1180591620717411303424, beyond 64"):
            await store.apply("c", [PutItem(item=huge)])
        odd = StoredItem(id="y", position=0, wire={"id": "y", "type": "message", "x": object()})
        with pytest.raises(ConfigurationError, match="PutItem cannot be stored"):
            await store.apply("c", [PutItem(item=odd)])
        with pytest.raises(ConfigurationError, match=r"updated_before=.*aware datetime"):
            await store.list_conversations(updated_before=datetime(2025, 1, 1))
        with pytest.raises(ConfigurationError, match="limit='2'"):
            await store.list_conversations(limit="2")  # type: ignore[arg-type]
        assert (await store.load("c")).items == ()  # nothing of the refused batches
        await store.close()

    run(body())
