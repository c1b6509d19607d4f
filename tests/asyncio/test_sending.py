"""Sending: audio (bytes, numpy), commit/clear, mute, messages, manual responses, raw events,
interruption — and response gating proved against the local server, which enforces one active
response per conversation."""

from __future__ import annotations

import numpy as np
import pytest

from voxwire.asyncio import (
    AssistantTranscriptDeltaEvent,
    AudioInterruptedEvent,
    ErrorEvent,
    HistoryMessage,
    RawServerEvent,
    RealtimeSession,
    ResponseDoneEvent,
    ResponseStartedEvent,
)
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import (
    InputAudioBufferCleared,
    ResponseCreate,
    user_message,
)

from .helpers import MANUAL, RATE_HZ, SLOW, device, run, serving, settle, speaking, until


def test_text_turn() -> None:
    async def body() -> None:
        async with serving() as server, RealtimeSession(url=server.url(), config=MANUAL) as session:
            await session.send_message("hello")
            events = await settle(session)
            assert not [e for e in events if isinstance(e, ErrorEvent)]
            done = events[-1]
            assert isinstance(done, ResponseDoneEvent)
            assert done.status == "completed"
            assert done.usage is not None
            history = session.history
            assert [(m.role, m.text) for m in history if isinstance(m, HistoryMessage)] == [
                ("user", "hello"),
                ("assistant", "Hello! How can I help you today?"),
            ]

    run(body())


def test_inputs_mid_response_never_collide_with_the_active_response() -> None:
    """Messages, manual creates and a raw response.create arrive while a response streams: the
    session holds and coalesces its requests, the server never answers
    conversation_already_has_active_response."""

    async def body() -> None:
        async with (
            serving(pacing=SLOW) as server,
            RealtimeSession(url=server.url(), config=MANUAL) as session,
        ):
            await session.send_message("tell me a story")
            before = await until(session, "assistant_transcript_delta")
            assert session.protocol.responses_in_progress
            # All of these arrive mid-response.
            await session.send_message("hello")
            await session.send_message("and the weather?", trigger_response=True)
            await session.create_response()
            await session.send_raw({"type": "response.create"})
            await session.send_raw(ResponseCreate())
            await session.create_response(instructions="Be brief.")
            assert session.protocol.held_response_creates == 2  # coalesced: plain + brief
            events = before + await settle(session, timeout_s=20)
            errors = [e for e in events if isinstance(e, ErrorEvent)]
            assert errors == []
            started = [e for e in events if isinstance(e, ResponseStartedEvent)]
            done = [e for e in events if isinstance(e, ResponseDoneEvent)]
            assert len(started) == len(done) == 3
            assert [d.status for d in done] == ["completed"] * 3
            # One at a time: each response started after the previous one ended.
            order = [
                e.type for e in events if isinstance(e, ResponseStartedEvent | ResponseDoneEvent)
            ]
            assert order == ["response_started", "response_done"] * 3

    run(body())


def test_manual_turn_with_audio_and_create_response() -> None:
    async def body() -> None:
        async with serving() as server, RealtimeSession(url=server.url(), config=MANUAL) as session:
            silence = np.zeros(RATE_HZ // 5, np.int16)  # 200 ms
            await session.send_audio(silence)
            await session.send_audio(silence.tobytes(), commit=True)
            added = await until(session, "history_added")
            user = added[-1].item  # type: ignore[union-attr]
            assert isinstance(user, HistoryMessage)
            assert user.role == "user"
            assert user.content[0].type == "audio"
            assert session.protocol.responses.all() == []  # turn detection off: nothing yet
            await session.create_response(instructions="Say something.", metadata={"turn": "1"})
            events = await settle(session)
            assert isinstance(events[-1], ResponseDoneEvent)
            assert events[-1].status == "completed"

    run(body())


def test_mute_stops_forwarding_audio() -> None:
    async def body() -> None:
        async with serving() as server, RealtimeSession(url=server.url(), config=MANUAL) as session:
            speech = np.full(RATE_HZ // 5, 1000, np.int16)
            session.mute(True)
            assert session.muted
            await session.send_audio(speech, commit=True)
            error = (await until(session, "error"))[-1]
            assert isinstance(error, ErrorEvent)
            assert error.code == "input_audio_buffer_commit_empty"
            assert error.source == "server"
            session.mute(False)
            await session.send_audio(speech, commit=True)
            added = (await until(session, "history_added"))[-1]
            assert added.item.role == "user"  # type: ignore[union-attr]

    run(body())


def test_clear_audio() -> None:
    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(url=server.url(), config=MANUAL, raw_server_events=True) as session,
        ):
            await session.send_audio(b"\x01\x00" * 4800)
            await session.clear_audio()
            await until(
                session,
                lambda e: (
                    isinstance(e, RawServerEvent) and isinstance(e.event, InputAudioBufferCleared)
                ),
            )
            await session.commit_audio()
            error = (await until(session, "error"))[-1]
            assert error.code == "input_audio_buffer_commit_empty"  # type: ignore[union-attr]

    run(body())


def test_bad_audio_and_bad_requests_raise_at_once() -> None:
    async def body() -> None:
        async with serving() as server, RealtimeSession(url=server.url(), config=MANUAL) as session:
            with pytest.raises(TypeError, match="int16"):
                await session.send_audio(np.zeros(10, np.float32))  # type: ignore[arg-type]
            with pytest.raises(ValueError, match="mono"):
                await session.send_audio(np.zeros((10, 2), np.int16))
            with pytest.raises(ConfigurationError, match="unknown parameter"):
                await session.create_response(instruction="typo")
            with pytest.raises(ConfigurationError, match="output_modalities"):
                await session.create_response(output_modalities=["video"])
            with pytest.raises(ConfigurationError):
                await session.send_raw({"type": "conversation.item.create"})
            with pytest.raises(ConfigurationError, match="type"):
                await session.send_raw({"item": {}})
            # None of that reached the server: the session is fine.
            await session.send_message("hello")
            events = await settle(session)
            assert not [e for e in events if isinstance(e, ErrorEvent)]

    run(body())


def test_send_raw_passes_unknown_events_through() -> None:
    async def body() -> None:
        async with serving() as server, RealtimeSession(url=server.url(), config=MANUAL) as session:
            await session.send_raw({"type": "future.event", "event_id": "mine"})
            error = (await until(session, "error"))[-1]
            assert isinstance(error, ErrorEvent)
            assert error.param == "type"
            assert error.event_id == "mine"

    run(body())


def test_out_of_band_response_runs_beside_the_conversation() -> None:
    async def body() -> None:
        async with (
            serving(pacing=SLOW) as server,
            RealtimeSession(url=server.url(), config=MANUAL) as session,
        ):
            await session.send_message("tell me a story")
            await until(session, "assistant_transcript_delta")
            await session.create_response(conversation="none", input=[user_message("hello")])
            events = await settle(session, timeout_s=20)
            assert not [e for e in events if isinstance(e, ErrorEvent)]
            assert len([e for e in events if isinstance(e, ResponseDoneEvent)]) == 2

    run(body())


def test_interrupt_cancels_and_drops_the_rest_of_the_response() -> None:
    async def body() -> None:
        async with (
            serving(pacing=SLOW) as server,
            RealtimeSession(url=server.url(), config=MANUAL) as session,
        ):
            await session.send_message("tell me a story")
            delta = (await until(session, "assistant_transcript_delta"))[-1]
            assert isinstance(delta, AssistantTranscriptDeltaEvent)
            await session.interrupt()
            await session.interrupt()  # nothing more to cancel: no second response.cancel
            events = await until(session, "response_done")
            done = events[-1]
            assert isinstance(done, ResponseDoneEvent)
            assert done.status == "cancelled"
            assert not [e for e in events if isinstance(e, ErrorEvent)]
            late = [e for e in events if isinstance(e, AssistantTranscriptDeltaEvent)]
            assert late == []  # deltas after the interruption are dropped

    run(body())


def test_cancel_response() -> None:
    async def body() -> None:
        async with (
            serving(pacing=SLOW) as server,
            RealtimeSession(url=server.url(), config=MANUAL) as session,
        ):
            await session.cancel_response()  # nothing in progress: nothing sent, no error
            await session.send_message("tell me a story")
            await until(session, "assistant_transcript_delta")
            await session.cancel_response()
            done = (await until(session, "response_done"))[-1]
            assert done.status == "cancelled"  # type: ignore[union-attr]

    run(body())


def test_update_history_and_session_history_follow_the_server() -> None:
    async def body() -> None:
        async with serving() as server, RealtimeSession(url=server.url(), config=MANUAL) as session:
            await session.send_message("hello")
            await settle(session)
            _, assistant = session.protocol.conversation.items()
            await session.update_history([assistant, user_message("first"), user_message("then")])
            await until(
                session,
                lambda e: (
                    e.type == "history_added"
                    and [getattr(i, "text", "") for i in session.history][-1:] == ["then"]
                ),
            )
            assert [(m.role, m.text) for m in session.history if isinstance(m, HistoryMessage)] == [
                ("assistant", "Hello! How can I help you today?"),
                ("user", "first"),
                ("user", "then"),
            ]

    run(body())


def test_audio_output_interrupt_truncates_what_was_played() -> None:
    async def body() -> None:
        ring, clock = device()
        async with speaking(clock) as session:
            await session.send_message("tell me a story")
            events = await settle(session)
            assert not [e for e in events if e.type == "audio"]  # it went to the clock
            assert [e.type for e in events].count("audio_end") == 1
            item_id = next(e.item_id for e in events if e.type == "audio_end")  # type: ignore[union-attr]
            received = session.protocol.audio_received_samples(item_id)
            assert clock.buffered_samples == received
            ring.pop(RATE_HZ // 2)  # the device played 500 ms
            await session.interrupt()
            events = await until(session, "history_updated")
            interrupted = [e for e in events if isinstance(e, AudioInterruptedEvent)]
            assert interrupted == [
                AudioInterruptedEvent(item_id=item_id, content_index=0, played_ms=500)
            ]
            assert clock.buffered_samples == 0
            assistant = session.history[-1]
            assert isinstance(assistant, HistoryMessage)
            assert assistant.truncated
            assert assistant.content[0].truncated_at_ms == 500  # type: ignore[union-attr]

    run(body())


def test_interrupt_deletes_an_item_nothing_of_which_was_heard() -> None:
    async def body() -> None:
        _, clock = device()
        async with speaking(clock) as session:
            await session.send_message("hello")
            await settle(session)
            assistant_id = session.history[-1].item_id
            await session.interrupt()  # the device never started playing it
            events = await until(session, "history_updated")
            assert AudioInterruptedEvent(item_id=assistant_id, content_index=0) in events
            assert [item.item_id for item in session.history] != []
            assert assistant_id not in [item.item_id for item in session.history]

    run(body())


def test_interrupt_with_played_samples_from_the_application() -> None:
    async def body() -> None:
        async with (
            serving(tts="espeak") as server,
            RealtimeSession(
                url=server.url(), config={"audio": {"input": {"turn_detection": None}}}
            ) as session,
        ):
            await session.send_message("hello")
            events = await settle(session)
            item_id = next(e.item_id for e in events if e.type == "audio_end")  # type: ignore[union-attr]
            await session.interrupt({(item_id, 0): RATE_HZ // 4})  # 250 ms were heard
            events = await until(session, "history_updated")
            assert AudioInterruptedEvent(item_id=item_id, content_index=0, played_ms=250) in events
            assistant = session.history[-1]
            assert isinstance(assistant, HistoryMessage)
            assert assistant.content[0].truncated_at_ms == 250  # type: ignore[union-attr]

    run(body())
