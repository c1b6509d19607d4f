"""Session events: their order and content for text, audio and voice turns, agent and user
states, barge-in, history (function calls paired with their outputs, late input transcripts),
the bounded queue and the raw opt-in."""

from __future__ import annotations

import asyncio
import json

import numpy as np
from websockets.asyncio.server import ServerConnection

from voxwire.agents import RealtimeAgent
from voxwire.asyncio import (
    AgentStateChangedEvent,
    AssistantTranscriptDeltaEvent,
    AssistantTranscriptDoneEvent,
    AudioContent,
    AudioEndEvent,
    AudioEvent,
    AudioInterruptedEvent,
    CloseEvent,
    ErrorEvent,
    HistoryAddedEvent,
    HistoryFunctionCall,
    HistoryFunctionCallOutput,
    HistoryMessage,
    HistoryUpdatedEvent,
    RawServerEvent,
    RealtimeSession,
    ResponseDoneEvent,
    SessionEvent,
    UserInputTranscribedEvent,
    UserStateChangedEvent,
)
from voxwire.protocol import FunctionTool, ResponseDone, ResponseOutputAudioDelta
from voxwire.protocol import function_call_output as output_item

from .helpers import (
    MANUAL,
    RATE_HZ,
    SLOW,
    all_done,
    device,
    drain,
    peer,
    poll,
    run,
    serving,
    session_created,
    settle,
    speaking,
    speech_pcm,
    until,
)

CHUNK_BYTES = RATE_HZ // 10 * 2  # 100 ms


def states(events: list[SessionEvent]) -> list[str]:
    return [e.new_state for e in events if isinstance(e, AgentStateChangedEvent)]


async def speak(session: RealtimeSession, pcm: bytes) -> None:
    for start in range(0, len(pcm), CHUNK_BYTES):
        await session.send_audio(pcm[start : start + CHUNK_BYTES])


def silence(ms: int) -> bytes:
    return b"\x00\x00" * (RATE_HZ * ms // 1000)


def test_text_turn_events_in_order() -> None:
    async def body() -> None:
        async with serving() as server, RealtimeSession(url=server.url(), config=MANUAL) as session:
            await session.send_message("hello")
            events = await settle(session)
            events += await until(session, "agent_state_changed")  # follows response_done
            assert states(events) == ["listening", "idle", "thinking", "speaking", "idle"]
            assert session.agent_state == "idle"
            added = [e.item for e in events if isinstance(e, HistoryAddedEvent)]
            assert [(m.role, m.text) for m in added if isinstance(m, HistoryMessage)] == [
                ("user", "hello"),
                ("assistant", ""),  # announced before its first delta
            ]
            deltas = [e for e in events if isinstance(e, AssistantTranscriptDeltaEvent)]
            done = next(e for e in events if isinstance(e, AssistantTranscriptDoneEvent))
            assert "".join(d.delta for d in deltas) == done.transcript
            assert {d.modality for d in deltas} == {"text"}
            assert done.modality == "text"
            updated = [e for e in events if isinstance(e, HistoryUpdatedEvent)][-1]
            assert updated.history[-1].text == done.transcript  # type: ignore[union-attr]
            assert not [e for e in events if isinstance(e, RawServerEvent)]  # opt-in only

    run(body())


def test_audio_events_carry_every_sample() -> None:
    async def body() -> None:
        async with (
            serving(tts="espeak") as server,
            RealtimeSession(
                url=server.url(),
                config={"audio": {"input": {"turn_detection": None}}},
                raw_server_events=True,
            ) as session,
        ):
            await session.send_message("hello")
            events = await settle(session)
            audio = [e for e in events if isinstance(e, AudioEvent)]
            end = [e for e in events if isinstance(e, AudioEndEvent)]
            assert len(end) == 1
            assert {(a.item_id, a.content_index) for a in audio} == {
                (end[0].item_id, end[0].content_index)
            }
            pcm = b"".join(a.pcm for a in audio)
            assert len(pcm) // 2 == session.protocol.audio_received_samples(end[0].item_id)
            assert int(np.abs(np.frombuffer(pcm, np.int16)).max()) > 1000
            transcript = next(e for e in events if isinstance(e, AssistantTranscriptDoneEvent))
            assert transcript.modality == "audio"
            raw = [e.event for e in events if isinstance(e, RawServerEvent)]
            assert not [r for r in raw if isinstance(r, ResponseOutputAudioDelta)]
            assert any(isinstance(r, ResponseDone) for r in raw)
            assert events.index(audio[-1]) < events.index(end[0])

    run(body())


def test_voice_turn_with_server_vad() -> None:
    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(
                url=server.url(),
                config={
                    "output_modalities": ["text"],
                    "audio": {"input": {"turn_detection": {"type": "server_vad"}}},
                },
                wait_for_session_updated=True,
            ) as session,
        ):
            assert session.agent_state == "listening"
            await speak(session, silence(300) + speech_pcm() + silence(800))
            events = await settle(session)
            events += await until(session, "agent_state_changed")
            user_states = [
                (e.old_state, e.new_state) for e in events if isinstance(e, UserStateChangedEvent)
            ]
            assert user_states == [("listening", "speaking"), ("speaking", "listening")]
            assert states(events) == ["listening", "thinking", "speaking", "listening"]
            user = session.history[0]
            assert isinstance(user, HistoryMessage)
            assert user.role == "user"
            assert isinstance(user.content[0], AudioContent)

    run(body())


def test_barge_in_stops_playback_and_truncates_what_was_heard() -> None:
    async def body() -> None:
        ring, clock = device(60)
        vad = {"audio": {"input": {"turn_detection": {"type": "server_vad"}}}}
        async with speaking(clock, config=vad, pacing=SLOW) as session:
            await session.send_message("tell me a story")
            await poll(lambda: clock.buffered_samples >= RATE_HZ // 2)
            ring.pop(RATE_HZ * 3 // 10)  # the device played 300 ms, then the user speaks
            await speak(session, silence(200) + speech_pcm())
            events = await until(session, lambda e: isinstance(e, AudioInterruptedEvent))
            interrupted = events[-1]
            assert isinstance(interrupted, AudioInterruptedEvent)
            assert interrupted.played_ms == 300
            assert clock.buffered_samples == 0  # playback stopped at once
            events = await until(
                session,
                lambda e: (
                    isinstance(e, HistoryUpdatedEvent)
                    and any(isinstance(m, HistoryMessage) and m.truncated for m in session.history)
                ),
            )
            done = [e for e in events if isinstance(e, ResponseDoneEvent)]
            assert [d.status for d in done] == ["cancelled"]  # by the server: turn_detected
            assert not [e for e in events if isinstance(e, ErrorEvent)]
            assistant = next(
                m for m in session.history if isinstance(m, HistoryMessage) and m.truncated
            )
            assert assistant.content[0].truncated_at_ms == 300  # type: ignore[union-attr]
            assert assistant.content[0].transcript is None  # the server drops cut transcripts  # type: ignore[union-attr]

    run(body())


def test_with_an_audio_output_the_agent_speaks_until_the_listener_heard_it_all() -> None:
    async def body() -> None:
        ring, clock = device(60)
        async with speaking(clock) as session:
            await session.send_message("hello")
            events = await until(session, "response_done")
            assert session.agent_state == "speaking"  # the server is done; the device is not
            assert clock.buffered_samples > RATE_HZ // 2
            ring.pop(clock.buffered_samples - RATE_HZ // 10)
            await asyncio.sleep(0.1)  # the watcher polls: still 100 ms to hear
            assert session.agent_state == "speaking"
            ring.pop(RATE_HZ)  # the device played the rest
            events += await until(session, "agent_state_changed")
            assert states(events)[-2:] == ["speaking", "idle"]
            assert clock.buffered_samples == 0

    run(body())


def test_function_calls_are_paired_with_their_outputs() -> None:
    weather = FunctionTool(
        name="get_weather",
        description="The weather in a city",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}},
    )
    agent = RealtimeAgent(name="forecaster", instructions="Answer.", tools=[weather])

    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(agent, url=server.url(), config=MANUAL) as session,
        ):
            await session.send_message("what is the weather?")
            await settle(session)
            call = session.history[-1]
            assert isinstance(call, HistoryFunctionCall)
            assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Paris"})
            assert call.output is None
            assert call.call_id is not None
            await session.send_message(output_item(call.call_id, '{"temperature": 21}'))
            await settle(session)
            history = session.history
            call = next(i for i in history if isinstance(i, HistoryFunctionCall))
            assert call.output == '{"temperature": 21}'
            kinds = [i.type for i in history]
            assert kinds == ["message", "function_call", "function_call_output", "message"]
            assert isinstance(history[2], HistoryFunctionCallOutput)
            assert history[-1].text == "It is 21 degrees in Paris."  # type: ignore[union-attr]

    run(body())


def test_transcription_failure_is_a_recoverable_error() -> None:
    async def body() -> None:
        async with (
            serving(transcriber=None) as server,  # no engine: every transcription fails
            RealtimeSession(
                url=server.url(),
                config={
                    "output_modalities": ["text"],
                    "audio": {
                        "input": {"turn_detection": None, "transcription": {"model": "whisper-1"}}
                    },
                },
            ) as session,
        ):
            await session.send_audio(silence(200), commit=True)
            error = (await until(session, "error"))[-1]
            assert isinstance(error, ErrorEvent)
            assert error.source == "transcription"
            assert error.recoverable

    run(body())


def test_late_input_transcripts_land_in_the_user_item() -> None:
    """The transcript of the user's audio arrives after the response started (as it does on the
    real service): it is handed out and lands in the user's item, not the assistant's."""

    def frame(**event: object) -> str:
        return json.dumps(event)

    user_item = {
        "id": "item_user",
        "type": "message",
        "role": "user",
        "status": "completed",
        "content": [{"type": "input_audio", "transcript": None}],
    }
    assistant_item = {
        "id": "item_bot",
        "type": "message",
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }

    async def service(ws: ServerConnection) -> None:
        await ws.send(session_created())
        await ws.recv()
        await asyncio.sleep(0.05)
        for text in (
            frame(type="conversation.item.added", event_id="e1", item=user_item),
            frame(
                type="response.created",
                event_id="e2",
                response={"id": "resp_1", "object": "realtime.response", "status": "in_progress"},
            ),
            frame(
                type="conversation.item.added",
                event_id="e3",
                previous_item_id="item_user",
                item=assistant_item,
            ),
            frame(
                type="conversation.item.input_audio_transcription.delta",
                event_id="e4",
                item_id="item_user",
                content_index=0,
                delta="What is ",
            ),
            frame(
                type="conversation.item.input_audio_transcription.completed",
                event_id="e5",
                item_id="item_user",
                content_index=0,
                transcript="What is the weather?",
            ),
        ):
            await ws.send(text)
        await ws.close()

    async def body() -> None:
        async with peer(service) as url, RealtimeSession(url=url) as session:
            events = await drain(session)
            transcribed = [e for e in events if isinstance(e, UserInputTranscribedEvent)]
            assert [(t.item_id, t.transcript, t.is_final) for t in transcribed] == [
                ("item_user", "What is ", False),
                ("item_user", "What is the weather?", True),
            ]
            user, assistant = session.history
            assert isinstance(user, HistoryMessage)
            assert user.text == "What is the weather?"
            assert assistant.item_id == "item_bot"
            assert isinstance(events[-1], CloseEvent)

    run(body())


def test_full_queue_drops_deltas_first_and_keeps_the_close_event() -> None:
    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(url=server.url(), config=MANUAL, max_queued_events=5) as session,
        ):
            await session.send_message("tell me a story")
            # Nobody reads the events meanwhile.
            await poll(lambda: all_done(session) and bool(session.protocol.responses.all()))
        events = await drain(session)
        assert session.dropped_events > 0
        assert len(events) == 5
        assert isinstance(events[-1], CloseEvent)
        # Deltas went first: what is left is mostly structure, not deltas.
        assert not [e for e in events if isinstance(e, AssistantTranscriptDeltaEvent)]

    run(body())
