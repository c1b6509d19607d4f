"""A session with an ``AudioOutput`` attached, end to end against the local server: the
truncation sent at an interruption is exactly what the virtual speaker played of the item
(output latency excluded, floored to ms), and the server accepts it.

The speaker (``MemoryOutput``) is stepped by hand, so what it played is known by arithmetic:
each ``advance`` hands ``PERIOD`` samples to the device, and a sample is heard ``LATENCY``
samples later. Periods and latency are chosen so the heard time is not a whole number of ms.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from voxwire.asyncio import RealtimeSession, SessionEvent
from voxwire.asyncio.events import (
    AudioEndEvent,
    AudioInterruptedEvent,
    ErrorEvent,
    RawServerEvent,
)
from voxwire.asyncio.events.history import HistoryMessage
from voxwire.audio import AudioOutput, MemoryOutput, PcmRing, PlaybackClock, WavFileOutput
from voxwire.exceptions import ConfigurationError
from voxwire.protocol.server_events import ConversationItemDeleted, ConversationItemTruncated
from voxwire.server import Pacing

from .helpers import (
    AUDIO_MANUAL,
    FAST,
    RATE_HZ,
    SLOW,
    poll,
    run,
    serving,
    settle,
    speech_pcm,
    until,
)

PERIOD_MS, PERIOD = 7.5, 180  # device period: 180 samples at 24 kHz
LATENCY_MS, LATENCY = 12.5, 300  # output latency: 300 samples
PREBUFFER_MS = 100.0
FADE = 96  # 4 ms at 24 kHz: the default fade-out
IDLE_PERIODS = 10  # played before any audio arrives: silence, not the item's
PLAYED_PERIODS = 38  # 6840 samples handed over, 6540 heard = 272.5 ms
HEARD = PLAYED_PERIODS * PERIOD - LATENCY
CHUNK_BYTES = RATE_HZ // 10 * 2  # 100 ms of user audio per send_audio


def speaker() -> MemoryOutput:
    return MemoryOutput(
        RATE_HZ, period_ms=PERIOD_MS, latency_ms=LATENCY_MS, prebuffer_ms=PREBUFFER_MS
    )


@asynccontextmanager
async def speaking_into(
    output: object, *, config: dict[str, Any] = AUDIO_MANUAL, pacing: Pacing = FAST
) -> AsyncIterator[RealtimeSession]:
    """A session on the local server (espeak-ng voice) playing into ``output``; server events
    are handed out too, so the test sees the server's answer to the truncate."""
    async with (
        serving(tts="espeak", pacing=pacing) as server,
        RealtimeSession(
            url=server.url(), config=config, audio_output=output, raw_server_events=True
        ) as session,
    ):
        yield session


def raw(events: list[SessionEvent], kind: type[Any]) -> list[Any]:
    return [e.event for e in events if isinstance(e, RawServerEvent) and isinstance(e.event, kind)]


def is_raw(kind: type[Any]) -> Any:
    return lambda e: isinstance(e, RawServerEvent) and isinstance(e.event, kind)


async def assert_truncated_and_accepted(
    session: RealtimeSession, item_id: str, expected_ms: int
) -> None:
    """The truncate carried ``expected_ms``; the server answered ``conversation.item.truncated``
    with it and no error; the history holds the cut item."""
    events = await until(session, is_raw(ConversationItemTruncated))
    interrupted = [e for e in events if isinstance(e, AudioInterruptedEvent)]
    assert interrupted == [
        AudioInterruptedEvent(item_id=item_id, content_index=0, played_ms=expected_ms)
    ]
    truncated = raw(events, ConversationItemTruncated)
    assert [(t.item_id, t.content_index, t.audio_end_ms) for t in truncated] == [
        (item_id, 0, expected_ms)
    ]
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assistant = next(i for i in session.history if i.item_id == item_id)
    assert isinstance(assistant, HistoryMessage)
    assert assistant.content[0].truncated_at_ms == expected_ms  # type: ignore[union-attr]


def audio_item(events: list[SessionEvent]) -> str:
    ends = [e for e in events if isinstance(e, AudioEndEvent)]
    assert len(ends) == 1
    return ends[0].item_id


def test_interrupt_truncates_exactly_what_the_speaker_played() -> None:
    async def body() -> None:
        out = speaker()
        out.advance(IDLE_PERIODS)  # the device runs before the reply: silence, not counted
        async with speaking_into(out) as session:
            await session.send_message("tell me a story")
            events = await settle(session)
            assert not [e for e in events if e.type == "audio"]  # it went to the speaker
            item_id = audio_item(events)
            received = session.protocol.audio_received_samples(item_id)
            assert out.output.ring.readable_samples == received  # all queued, none played
            out.advance(PLAYED_PERIODS)
            played = out.played()
            lead = IDLE_PERIODS * PERIOD + LATENCY  # idle, then the device's latency
            assert len(played) - lead == HEARD
            assert not played[:lead].any()
            assert np.abs(played[lead:]).max() > 1000  # speech was heard after the lead-in
            await session.interrupt()
            assert out.output.ring.readable_samples == 0  # the unplayed audio is dropped
            await assert_truncated_and_accepted(session, item_id, HEARD * 1000 // RATE_HZ)
            assert HEARD * 1000 // RATE_HZ == 272  # 272.5 ms, floored
            # The device buffer still plays out (the latency), then the fade, then silence.
            after = out.advance(4)
            assert not after[LATENCY + FADE :].any()
            assert np.abs(after[LATENCY + FADE - 8 : LATENCY + FADE]).max() < 400
            assert out.output.underruns == 0

    run(body())


def test_server_vad_barge_in_truncates_what_the_speaker_played_while_streaming() -> None:
    async def body() -> None:
        out = speaker()
        vad = {"audio": {"input": {"turn_detection": {"type": "server_vad"}}}}
        async with speaking_into(out, config=vad, pacing=SLOW) as session:
            await session.send_message("tell me a story")
            # The reply is still streaming (the part is open) with more than the prebuffer and
            # the periods to play queued: the speaker starts at once and does not run dry.
            need = max(PLAYED_PERIODS * PERIOD, int(PREBUFFER_MS) * RATE_HZ // 1000)
            await poll(lambda: out.output.ring.readable_samples >= need + RATE_HZ // 10)
            out.advance(PLAYED_PERIODS)
            assert out.output.underruns == 0
            pcm = b"\x00\x00" * (RATE_HZ // 5) + speech_pcm()  # 200 ms silence, then speech
            for start in range(0, len(pcm), CHUNK_BYTES):
                await session.send_audio(pcm[start : start + CHUNK_BYTES])
            events = await until(session, lambda e: isinstance(e, AudioInterruptedEvent))
            interrupted = events[-1]
            assert isinstance(interrupted, AudioInterruptedEvent)
            assert interrupted.played_ms == HEARD * 1000 // RATE_HZ
            assert out.output.ring.readable_samples == 0
            events = await until(session, is_raw(ConversationItemTruncated))
            truncated = raw(events, ConversationItemTruncated)
            assert [(t.item_id, t.audio_end_ms) for t in truncated] == [
                (interrupted.item_id, HEARD * 1000 // RATE_HZ)
            ]
            assert not [e for e in events if isinstance(e, ErrorEvent)]
            assert out.output.ring.readable_samples == 0

    run(body())


def test_an_interrupt_before_the_first_heard_sample_deletes_the_item() -> None:
    async def body() -> None:
        out = speaker()
        async with speaking_into(out.output) as session:  # the AudioOutput itself
            await session.send_message("hello")
            item_id = audio_item(await settle(session))
            out.advance(1)  # 180 samples handed to the device, none heard yet (latency 300)
            assert not out.played().any()
            await session.interrupt()
            events = await until(session, is_raw(ConversationItemDeleted))
            assert [d.item_id for d in raw(events, ConversationItemDeleted)] == [item_id]
            interrupted = [e for e in events if isinstance(e, AudioInterruptedEvent)]
            assert interrupted == [AudioInterruptedEvent(item_id=item_id, content_index=0)]
            assert not raw(events, ConversationItemTruncated)
            assert not [e for e in events if isinstance(e, ErrorEvent)]
            assert item_id not in [item.item_id for item in session.history]

    run(body())


def test_g711_output_is_truncated_at_the_item_rate() -> None:
    async def body() -> None:
        out = speaker()  # a 24 kHz device: the 8 kHz µ-law reply is decoded and resampled
        pcmu = {"format": {"type": "audio/pcmu"}}
        config = {"audio": {"input": {"turn_detection": None}, "output": pcmu}}
        async with speaking_into(out, config=config) as session:
            await session.send_message("tell me a story")
            item_id = audio_item(await settle(session))
            assert session.protocol.audio_received_samples(item_id) > HEARD // 3  # 8 kHz samples
            out.advance(PLAYED_PERIODS)
            await session.interrupt()
            # 6540 device samples heard, less the 8 -> 24 kHz resampler's warm-up (124 samples
            # before the sound) = 2138 samples at 8 kHz = 267.25 ms, floored.
            heard = (HEARD - 124) // 3
            await assert_truncated_and_accepted(session, item_id, heard * 1000 // 8000)

    run(body())


def test_the_agent_speaks_until_the_speaker_played_it_all() -> None:
    async def body() -> None:
        out = speaker()
        async with speaking_into(out) as session:
            await session.send_message("hello")
            item_id = audio_item(await settle(session))
            assert session.agent_state == "speaking"  # the server is done, the speaker is not
            total = out.output.ring.readable_samples
            out.advance((total + LATENCY - 1) // PERIOD)  # heard: all but the last samples
            assert 0 < out.output.unheard_samples <= LATENCY  # still in the device buffer
            assert out.output.ring.readable_samples == 0
            await asyncio.sleep(0.1)  # the playback monitor polls every 20 ms
            assert session.agent_state == "speaking"
            out.advance(2)
            await until(session, lambda e: e.type == "agent_state_changed")
            assert session.agent_state == "idle"
            assert session.protocol.audio_received_samples(item_id) == total
            assert out.output.underruns == 0

    run(body())


def test_audio_output_accepts_outputs_speakers_and_clocks(tmp_path: Path) -> None:
    wav = WavFileOutput(tmp_path / "out.wav")
    try:
        for target in (
            speaker(),
            speaker().output,
            wav,
            PlaybackClock(PcmRing(RATE_HZ), RATE_HZ),
            AudioOutput(),
        ):
            assert RealtimeSession(audio_output=target).options.audio_output is target
    finally:
        wav.close()


@pytest.mark.parametrize("bad", ["speaker", PcmRing(RATE_HZ), type("Holder", (), {"output": 1})()])
def test_anything_else_is_refused_naming_what_is_accepted(bad: object) -> None:
    with pytest.raises(ConfigurationError) as raised:
        RealtimeSession(audio_output=bad)  # type: ignore[arg-type]
    message = str(raised.value)
    assert "audio_output=" in message
    for accepted in ("AudioOutput", "MemoryOutput", "PlaybackClock"):
        assert accepted in message
