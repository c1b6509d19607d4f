"""The server keeps item audio within a budget: the newest parts whole, older ones as a duration
and a transcript, with the service's error shape for a truncate or retrieve that needs them."""

from __future__ import annotations

import base64
import random

import pytest

from voxwire.protocol import InputAudio, MessageItem, OutputAudio
from voxwire.protocol.units import PCM16_24K
from voxwire.server import RealtimeServer
from voxwire.server.core.conversation import ServerConversation
from voxwire.server.core.errors import ServerError

from .helpers import client_of, run, serving

MS = PCM16_24K.sample_rate_hz // 1000 * 2  # bytes per millisecond of PCM16 24 kHz


def assistant(item_id: str) -> MessageItem:
    return MessageItem(id=item_id, role="assistant", content=[OutputAudio(transcript="hi")])


def user(item_id: str) -> MessageItem:
    return MessageItem(id=item_id, role="user", content=[InputAudio(transcript=None)])


def test_the_oldest_parts_lose_their_audio_and_keep_their_duration() -> None:
    conversation = ServerConversation(audio_budget_bytes=250 * MS)
    for n in range(3):
        conversation.insert(assistant(f"a{n}"), None)
        for _ in range(10):  # streamed in deltas of 10 ms
            conversation.append_audio(f"a{n}", 0, b"\x01\x00" * (MS // 2) * 10, PCM16_24K)
    # 3 x 100 ms over a 250 ms budget: a0 is dropped, a1 and a2 kept.
    assert conversation.audio_kept_bytes == 200 * MS
    assert [conversation.audio_duration_ms(f"a{n}", 0) for n in range(3)] == [100, 100, 100]
    with pytest.raises(ServerError) as dropped:
        conversation.truncate("a0", 0, 50)
    assert (dropped.value.code, dropped.value.param) == ("invalid_value", "item_id")
    assert "no longer kept" in dropped.value.message
    with pytest.raises(ServerError):
        conversation.with_audio("a0")
    # Beyond the duration it is still the duration error, as before.
    with pytest.raises(ServerError, match="already shorter than 101ms"):
        conversation.truncate("a0", 0, 101)
    conversation.truncate("a1", 0, 40)
    assert conversation.audio_kept_bytes == 140 * MS
    part = conversation.with_audio("a1").content[0]
    assert isinstance(part, OutputAudio)
    assert part.audio == b"\x01\x00" * (MS // 2) * 40
    conversation.delete("a2")
    assert conversation.audio_kept_bytes == 40 * MS


def test_the_newest_part_is_kept_whole_even_over_the_budget() -> None:
    conversation = ServerConversation(audio_budget_bytes=10 * MS)
    conversation.insert(user("u"), None)
    conversation.set_audio("u", 0, b"\x00" * 20 * MS, PCM16_24K)
    conversation.insert(assistant("a"), None)
    conversation.append_audio("a", 0, b"\x00" * 30 * MS, PCM16_24K)
    conversation.append_audio("a", 0, b"\x00" * 30 * MS, PCM16_24K)
    assert conversation.audio_kept_bytes == 60 * MS
    conversation.truncate("a", 0, 45)  # the part being played can be cut
    assert conversation.audio_duration_ms("u", 0) == 20  # input audio still counts as tokens
    with pytest.raises(ServerError, match="no longer kept"):
        conversation.with_audio("u")


def test_no_budget_keeps_everything() -> None:
    conversation = ServerConversation(audio_budget_bytes=None)
    for n in range(20):
        conversation.insert(assistant(f"a{n}"), None)
        conversation.append_audio(f"a{n}", 0, b"\x00" * MS * 100, PCM16_24K)
    assert conversation.audio_kept_bytes == 20 * 100 * MS
    assert conversation.with_audio("a0").content[0].audio == b"\x00" * MS * 100  # type: ignore[union-attr]


def test_random_operations_keep_the_budget_and_the_count() -> None:
    """Seeded: whatever the sequence, the bytes counted are the bytes held, never more than the
    budget or the parts set and appended to last, and durations change only by appending and
    truncating."""
    rng = random.Random(19)
    cases = 0
    for budget in (0, 7 * MS, 64 * MS, 1000 * MS):
        conversation = ServerConversation(audio_budget_bytes=budget)
        durations: dict[str, int] = {}
        last = {"set": "", "appended": ""}
        for step in range(400):
            op = rng.random()
            if op < 0.45 or not durations:
                item_id = last["set"] = f"i{step}"
                conversation.insert(assistant(item_id), None)
                conversation.set_audio(item_id, 0, b"\x00" * MS * rng.randint(0, 40), PCM16_24K)
                durations[item_id] = conversation.audio_duration_ms(item_id, 0)
            elif op < 0.75:
                item_id = last["set"] if rng.random() < 0.5 else rng.choice(list(durations))
                item_id = last["appended"] = item_id or rng.choice(list(durations))
                conversation.append_audio(item_id, 0, b"\x00" * MS * 10, PCM16_24K)
                durations[item_id] += 10
            elif op < 0.9:
                item_id = rng.choice(list(durations))
                end = rng.randint(0, durations[item_id])
                if _kept(conversation, item_id):
                    conversation.truncate(item_id, 0, end)
                    durations[item_id] = end
                else:
                    with pytest.raises(ServerError, match="no longer kept"):
                        conversation.truncate(item_id, 0, end)
            else:
                item_id = rng.choice(list(durations))
                conversation.delete(item_id)
                del durations[item_id]
                last = {k: "" if v == item_id else v for k, v in last.items()}
            held = sum(
                len(part.audio)  # type: ignore[union-attr, arg-type]
                for item_id in durations
                if _kept(conversation, item_id)
                for part in conversation.with_audio(item_id).content
            )
            assert conversation.audio_kept_bytes == held
            protected = sum(durations.get(item_id, 0) * MS for item_id in set(last.values()))
            assert held <= max(budget, protected)
            for item_id, duration in durations.items():
                assert conversation.audio_duration_ms(item_id, 0) == duration
            cases += 1
    assert cases == 1600


def _kept(conversation: ServerConversation, item_id: str) -> bool:
    try:
        conversation.with_audio(item_id)
    except ServerError:
        return False
    return True


def test_a_budget_must_be_bytes() -> None:
    for bad in (-1, 1.5, "1MB"):
        with pytest.raises(ValueError, match="audio_budget_bytes"):
            RealtimeServer(audio_budget_bytes=bad)  # type: ignore[arg-type]


def test_over_the_wire_an_old_answer_cannot_be_truncated_but_the_newest_can() -> None:
    async def body() -> None:
        async with serving(audio_budget_bytes=1) as server, client_of(server) as client:
            ids = []
            for _ in range(2):
                await client.say("hello")
                events = await client.respond(output_modalities=["audio"])
                ids.append(events[-1]["response"]["output"][0]["id"])
            for kind, extra in (
                ("conversation.item.truncate", {"content_index": 0, "audio_end_ms": 10}),
                ("conversation.item.retrieve", {}),
            ):
                await client.send({"type": kind, "item_id": ids[0], "event_id": "ev", **extra})
                error = (await client.until("error"))[-1]["error"]
                assert (error["type"], error["code"], error["param"], error["event_id"]) == (
                    "invalid_request_error",
                    "invalid_value",
                    "item_id",
                    "ev",
                )
                assert "no longer kept" in error["message"]
            await client.send(
                {
                    "type": "conversation.item.truncate",
                    "item_id": ids[1],
                    "content_index": 0,
                    "audio_end_ms": 10,
                }
            )
            assert (await client.until("conversation.item.truncated"))[-1]["item_id"] == ids[1]
            await client.send({"type": "conversation.item.retrieve", "item_id": ids[1]})
            part = (await client.until("conversation.item.retrieved"))[-1]["item"]["content"][0]
            assert len(base64.b64decode(part["audio"])) == 10 * MS

    run(body())
