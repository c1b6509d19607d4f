"""A bounded history (``max_history_items``): the protocol core and the recorder hold the last
items, the store still gets every one in the server's order, and what the recorder packs
(items it no longer touches) comes back intact.

Seeded: conversations of a few hundred items, appended, inserted among the recent ones and at
the root, deleted, transcribed (deltas only, or done) and truncated, fed to bounded and unbounded
copies of the protocol core and the recorder side by side."""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.asyncio.agent_helpers import ask, of_type
from tests.asyncio.helpers import MANUAL, serving
from tests.store.conftest import Backend
from tests.store.frames import run
from tests.store.session_child import SCENARIO, agents
from tests.store.test_recorder import same_view
from voxwire.asyncio import RealtimeSession, SessionEvent
from voxwire.asyncio.events import ErrorEvent, HistoryAddedEvent, HistoryUpdatedEvent
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import RealtimeProtocol
from voxwire.protocol.codec import decode_server_event
from voxwire.protocol.conversation import MIN_HISTORY_ITEMS, ConversationState
from voxwire.store import ConversationRecorder, conversation_state

BOUND = MIN_HISTORY_ITEMS
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def conversation_frames(seed: int, n: int = 300) -> tuple[list[str], set[str]]:
    """A server's frames for a conversation: items appended, put at the root, or inserted after
    one of the items a bounded copy holds (after a forgotten one, a bounded copy could only put
    it at the end); changes and deletions of held items. Also returns the ids of the items
    whose transcript is final (``*.done``: no delta comes after it)."""
    rng = random.Random(seed)
    finished: set[str] = set()
    frames: list[dict[str, Any]] = []
    order: list[str] = []
    held = 0  # how many of the last items a bounded copy holds
    for step in range(n):
        op = rng.random()
        if op < 0.55 or held < 2:
            item_id = f"item_{step}"
            where = rng.random()
            if where < 0.75 or not held:
                previous = order[-1] if order else None
            elif where < 0.85:
                previous = None  # the root: first of the whole conversation
            else:
                previous = rng.choice(order[-held:])
            index = 0 if previous is None else order.index(previous) + 1
            order.insert(index, item_id)
            if index > 0 or len(order) <= BOUND:
                held = min(held + 1, BOUND)
            frames.append(
                {
                    "type": "conversation.item.added",
                    "previous_item_id": previous,
                    "item": {
                        "id": item_id,
                        "type": "message",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_audio", "transcript": None}],
                    },
                }
            )
        elif op < 0.85:
            item_id = rng.choice(order[-held:])
            if item_id in finished:
                continue
            common = {"response_id": "resp_1", "item_id": item_id, "output_index": 0}
            frames.append(
                {
                    "type": "response.output_audio_transcript.delta",
                    **common,
                    "content_index": 0,
                    "delta": f" word{step}",
                }
            )
            if rng.random() < 0.5:
                finished.add(item_id)
                frames.append(
                    {
                        "type": "response.output_audio_transcript.done",
                        **common,
                        "content_index": 0,
                        "transcript": f"said {step}",
                    }
                )
        elif op < 0.93:
            item_id = rng.choice(order[-held:])
            frames.append(
                {
                    "type": "conversation.item.truncated",
                    "item_id": item_id,
                    "content_index": 0,
                    "audio_end_ms": step,
                }
            )
        else:
            item_id = rng.choice(order[-held:])
            order.remove(item_id)
            held -= 1
            frames.append({"type": "conversation.item.deleted", "item_id": item_id})
    texts = [json.dumps({"event_id": f"event_{i}", **f}) for i, f in enumerate(frames)]
    return texts, finished


@pytest.mark.parametrize("seed", range(6))
def test_the_bounded_copies_hold_the_last_items_and_the_store_every_one(
    backend: Backend, seed: int
) -> None:
    frames, finished = conversation_frames(seed)
    whole, bounded = (
        RealtimeProtocol(beta=False),
        RealtimeProtocol(beta=False, max_history_items=BOUND),
    )
    recorders = {
        "whole": ConversationRecorder("whole", NOW),
        "bounded": ConversationRecorder("bounded", NOW, max_items=BOUND),
    }

    async def body() -> None:
        store = await backend.open()
        for conversation_id in recorders:
            await store.create(conversation_id)
        for frame in frames:
            whole.receive_text(frame)
            bounded.receive_text(frame)
            event = decode_server_event(frame)
            for conversation_id, recorder in recorders.items():
                ops = recorder.receive(event)
                if ops:
                    await store.apply(conversation_id, ops)
        loaded = {c: await store.load(c) for c in recorders}
        await store.close()

        kept = bounded.conversation.item_ids
        assert len(kept) <= BOUND
        assert bounded.conversation.forgotten > 0
        assert kept == whole.conversation.item_ids[len(whole.conversation) - len(kept) :]
        # The recorder packs all but the items touched last: its snapshot is the core's view.
        same_view(
            whole.conversation,
            conversation_state(recorders["whole"].snapshot(NOW).items),
        )
        same_view(
            bounded.conversation,
            conversation_state(recorders["bounded"].snapshot(NOW).items),
        )
        # Both stores hold the whole conversation in the server's order, with every final
        # transcript and truncation (in-flight deltas are written when it suits each recorder).
        for stored in (loaded["whole"], loaded["bounded"]):
            state = conversation_state(stored.items)
            assert state.item_ids == whole.conversation.item_ids
            for item_id in state.item_ids:
                expected = whole.conversation
                assert state.truncated_at_ms(item_id) == expected.truncated_at_ms(item_id)
                if item_id in finished or state.truncated_at_ms(item_id) is not None:
                    assert state.transcript(item_id) == expected.transcript(item_id)

    run(body())


def test_forgetting_writes_what_was_not_written_yet() -> None:
    recorder = ConversationRecorder("c", NOW, max_items=BOUND)
    first = decode_server_event(conversation_frames(0, 1)[0][0])
    recorder.receive(first)
    delta = json.dumps(
        {
            "type": "response.output_audio_transcript.delta",
            "event_id": "e",
            "response_id": "r",
            "item_id": "item_0",
            "output_index": 0,
            "content_index": 0,
            "delta": "in flight",
        }
    )
    assert recorder.receive(decode_server_event(delta)) == []  # a delta is not written
    written = []
    for n in range(1, BOUND + 1):
        frame = {
            "type": "conversation.item.added",
            "event_id": f"e{n}",
            "previous_item_id": f"item_{n - 1}",
            "item": {"id": f"item_{n}", "type": "message", "role": "user", "content": []},
        }
        written += recorder.receive(decode_server_event(json.dumps(frame)))
    forgotten = [op.item for op in written if getattr(op, "item", None) and op.item.id == "item_0"]
    assert [item.transcripts for item in forgotten] == [{0: "in flight"}]
    assert next(item.id for item in recorder.snapshot(NOW).items) == "item_1"
    assert not recorder.holds("item_0")


def test_a_bound_too_small_to_keep_what_plays_is_refused() -> None:
    for bad in (0, MIN_HISTORY_ITEMS - 1, 8.5, True, "8"):
        with pytest.raises(ConfigurationError, match="max_history_items"):
            ConversationState(bad)  # type: ignore[arg-type]


def test_a_session_with_a_bounded_history_and_a_store(backend: Backend, tmp_path: Path) -> None:
    """Six turns (two with a tool call) over the local server with ``max_history_items=8``:
    history events, ``session.history`` and ``snapshot()`` hold the last 8 items, the store all
    16; resumed from the store with the same bound, the new server gets all 16 (the model's
    context), the session holds the last 8 and the conversation goes on."""

    async def body() -> None:
        store = await backend.open()
        agent = agents(tmp_path, gate=False)
        async with serving(scenario=SCENARIO) as server:
            async with RealtimeSession(
                agent, url=server.url(), config=MANUAL, store=store, max_history_items=BOUND
            ) as session:
                events: list[SessionEvent] = []
                for text in ("hi", "what is the weather", "one", "two", "weather again", "three"):
                    events += await ask(session, text)
                added = [e.item.item_id for e in of_type(events, HistoryAddedEvent)]
                last = of_type(events, HistoryUpdatedEvent)[-1]
                held = [item.item_id for item in session.history]
                snapshot = session.snapshot()
            stored = await store.load(snapshot.conversation_id)
            assert len(added) == len(stored.items) == 16
            assert [i.id for i in stored.items] == added
            assert held == [i.item_id for i in last.history] == added[-BOUND:]
            assert [i.id for i in snapshot.items] == added[-BOUND:]
            assert snapshot.usage == stored.usage
            assert stored.usage.responses == 8

            resumed = RealtimeSession.resume(
                store,
                snapshot.conversation_id,
                agent=agent,
                url=server.url(),
                config=MANUAL,
                max_history_items=BOUND,
            )
            async with resumed:
                (connection,) = server.connections
                assert len(connection.session.conversation) == 16
                after = await ask(resumed, "weather once more")
                assert not of_type(after, ErrorEvent)
                assert len(resumed.history) == BOUND
                assert resumed.snapshot().items[-1].transcripts == {0: "It is 21 degrees in Paris."}
        final = await store.load(snapshot.conversation_id)
        await store.close()
        assert len(final.items) == 20
        assert [i.id for i in final.items][:16] == added

    run(body())
