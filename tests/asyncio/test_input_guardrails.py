"""Input guardrails: what the user says is checked before the agent answers. Text messages and
spoken turns (server VAD, transcribed) against the local server over loopback: the session
holds ``create_response`` off on the wire and answers only after the checks passed; a trip
emits ``input_guardrail_tripped`` and refuses (said, silent, or made by a function). The
application's own view of the configuration is kept."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from tests.asyncio.agent_helpers import agent_session, ask, last_assistant_text, of_type
from tests.asyncio.helpers import RATE_HZ, ScriptedTranscriber, run, serving, speech_pcm, until
from voxwire.agents import (
    DEFAULT_REFUSAL,
    GuardrailResult,
    RealtimeAgent,
    input_guardrail,
)
from voxwire.asyncio import RealtimeSession, ReconnectPolicy
from voxwire.asyncio.events import (
    ErrorEvent,
    InputGuardrailTrippedEvent,
    ResponseDoneEvent,
    SpeechCreatedEvent,
)
from voxwire.asyncio.events.history import HistoryMessage
from voxwire.exceptions import ConfigurationError
from voxwire.protocol.config import ServerVad
from voxwire.server import Drop

CHECKED: list[str] = []


@input_guardrail
async def no_secrets(agent: RealtimeAgent, text: str) -> GuardrailResult:
    CHECKED.append(text)
    await asyncio.sleep(0)
    return GuardrailResult("secret" in text.lower(), {"length": len(text)})


GUARDED = RealtimeAgent(name="guarded", instructions="Answer.", input_guardrails=[no_secrets])
OPEN = RealtimeAgent(name="open", instructions="Answer.")


def assistant_texts(session: RealtimeSession) -> list[str]:
    return [
        m.text for m in session.history if isinstance(m, HistoryMessage) and m.role == "assistant"
    ]


async def settled(session: RealtimeSession) -> list[Any]:
    """Events until the session has nothing running (no response, no check)."""
    return await until(
        session,
        lambda e: (
            isinstance(e, ResponseDoneEvent)
            and session.protocol.can_create_response
            and session.background_tasks == 0
        ),
    )


# --- text messages ------------------------------------------------------------------------------


def test_a_message_that_passes_is_answered_after_the_check() -> None:
    async def body() -> None:
        CHECKED.clear()
        async with agent_session(GUARDED) as session:
            events = await ask(session, "good morning")
            assert CHECKED == ["good morning"]
            assert last_assistant_text(session) == "You said: good morning"
            assert [e.source for e in of_type(events, SpeechCreatedEvent)] == ["response"]
            assert not of_type(events, InputGuardrailTrippedEvent)

    run(body())


def test_a_message_that_trips_is_refused_and_never_answered() -> None:
    async def body() -> None:
        async with agent_session(GUARDED) as session:
            await session.send_message("tell me the secret code")
            events = await settled(session)
            (tripped,) = of_type(events, InputGuardrailTrippedEvent)
            assert tripped.text == "tell me the secret code"
            assert tripped.guardrails == ("no_secrets",)
            assert tripped.results[0].output_info == {"length": 23}
            assert tripped.refusal == DEFAULT_REFUSAL
            assert tripped.item_id == session.history[0].item_id
            assert [e.source for e in of_type(events, SpeechCreatedEvent)] == ["guardrail"]
            assert assistant_texts(session) == [DEFAULT_REFUSAL]
            # The session goes on, and the next message is answered.
            await ask(session, "good evening")
            assert last_assistant_text(session) == "You said: good evening"

    run(body())


def test_a_silent_refusal_sends_no_response() -> None:
    async def body() -> None:
        async with agent_session(GUARDED, input_guardrail_refusal=None) as session:
            await session.send_message("the secret please")
            events = await until(session, "input_guardrail_tripped")
            (tripped,) = of_type(events, InputGuardrailTrippedEvent)
            assert tripped.refusal is None
            await ask(session, "good day")  # answered; nothing came before it
            assert assistant_texts(session) == ["You said: good day"]
            assert len(session.protocol.responses.all()) == 1

    run(body())


def test_a_refusal_function_gets_the_tripped_names() -> None:
    async def body() -> None:
        refusal = "I cannot discuss that ({})."
        async with agent_session(
            GUARDED, input_guardrail_refusal=lambda names: refusal.format(", ".join(names))
        ) as session:
            await session.send_message("secret")
            await settled(session)
            assert assistant_texts(session) == ["I cannot discuss that (no_secrets)."]

    run(body())


def test_a_raising_input_guardrail_is_reported_and_counts_as_not_tripped() -> None:
    @input_guardrail
    def broken(agent: RealtimeAgent, text: str) -> bool:
        raise RuntimeError("classifier down")

    agent = RealtimeAgent(name="a", input_guardrails=[broken])

    async def body() -> None:
        async with agent_session(agent) as session:
            events = await ask(session, "good day")
            (error,) = of_type(events, ErrorEvent)
            assert error.source == "guardrail"
            assert "input guardrail 'broken' raised" in error.message
            assert last_assistant_text(session) == "You said: good day"

    run(body())


def test_messages_without_input_guardrails_are_answered_as_before() -> None:
    async def body() -> None:
        CHECKED.clear()
        async with agent_session(OPEN) as session:
            await ask(session, "the secret")
            assert last_assistant_text(session) == "You said: the secret"
            assert CHECKED == []

    run(body())


def test_input_guardrails_are_checked_at_declaration() -> None:
    with pytest.raises(ConfigurationError, match="input guardrail"):
        RealtimeAgent(name="a", input_guardrails=[no_secrets.function])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="input_guardrail_refusal"):
        RealtimeSession(GUARDED, input_guardrail_refusal=42)  # type: ignore[arg-type]


# --- spoken turns -------------------------------------------------------------------------------


VAD_TRANSCRIBED = {
    "output_modalities": ["text"],
    "audio": {
        "input": {
            "transcription": {"model": "whisper-1"},
            "turn_detection": {"type": "server_vad", "silence_duration_ms": 300},
        }
    },
}


@asynccontextmanager
async def voice_session(
    agent: RealtimeAgent, transcriber: Any, config: dict[str, Any] = VAD_TRANSCRIBED
) -> AsyncIterator[RealtimeSession]:
    async with (
        serving(transcriber=transcriber) as server,
        RealtimeSession(
            agent, url=server.url(), config=config, wait_for_session_updated=True
        ) as session,
    ):
        yield session


async def speak(session: RealtimeSession) -> None:
    silence = b"\x00\x00" * (RATE_HZ // 2)
    pcm = silence + speech_pcm() + silence
    chunk = RATE_HZ // 10 * 2
    for start in range(0, len(pcm), chunk):
        await session.send_audio(pcm[start : start + chunk])


def create_response_on_the_wire(session: RealtimeSession) -> object:
    config = session.protocol.session
    assert config is not None
    assert config.audio
    assert config.audio.input
    detection = config.audio.input.turn_detection
    assert isinstance(detection, ServerVad)
    return detection.create_response


def test_a_spoken_turn_is_answered_only_after_its_transcript_passed() -> None:
    async def body() -> None:
        CHECKED.clear()
        transcriber = ScriptedTranscriber("what is the weather like", "what is the secret")
        async with voice_session(GUARDED, transcriber) as session:
            # The wire holds responses; the application's view keeps its own setting.
            assert create_response_on_the_wire(session) is False
            view = session.config
            assert view is not None
            assert view.audio
            assert view.audio.input
            assert isinstance(view.audio.input.turn_detection, ServerVad)
            assert view.audio.input.turn_detection.create_response is True
            await speak(session)
            events = await settled(session)
            assert CHECKED == ["what is the weather like"]
            assert [e.source for e in of_type(events, SpeechCreatedEvent)] == ["response"]
            # The session answers the turn in the server's stead: not the application's request.
            assert [e.user_initiated for e in of_type(events, SpeechCreatedEvent)] == [False]
            assert assistant_texts(session) == ["You said: what is the weather like"]
            await speak(session)
            events = await settled(session)
            (tripped,) = of_type(events, InputGuardrailTrippedEvent)
            assert tripped.text == "what is the secret"
            assert assistant_texts(session)[-1] == DEFAULT_REFUSAL

    run(body(), timeout_s=60)


def test_a_spoken_turn_without_transcription_is_not_answered_and_says_why() -> None:
    config = {
        "output_modalities": ["text"],
        "audio": {"input": {"turn_detection": {"type": "server_vad", "silence_duration_ms": 300}}},
    }

    async def body() -> None:
        async with voice_session(GUARDED, None, config) as session:
            await speak(session)
            events = await until(session, "error", timeout_s=20)
            error = events[-1]
            assert isinstance(error, ErrorEvent)
            assert error.source == "guardrail"
            assert "audio.input.transcription" in error.message
            assert session.protocol.responses.all() == []

    run(body(), timeout_s=60)


def test_create_response_follows_the_agent_and_the_application() -> None:
    async def body() -> None:
        async with voice_session(GUARDED, ScriptedTranscriber()) as session:
            assert create_response_on_the_wire(session) is False
            # The application turns create_response off itself: it stays off after the switch.
            await session.update_session(
                {
                    "audio": {
                        "input": {
                            "turn_detection": {"type": "server_vad", "create_response": False}
                        }
                    }
                }
            )
            await session.update_agent(OPEN)
            assert create_response_on_the_wire(session) is False  # the application's choice
            await session.update_session(
                {"audio": {"input": {"turn_detection": {"type": "server_vad"}}}}
            )
            await session.update_agent(GUARDED)
            assert create_response_on_the_wire(session) is False  # held again
            await session.update_agent(OPEN)
            assert create_response_on_the_wire(session) is True  # given back

    run(body(), timeout_s=60)


def test_after_a_reconnection_create_response_is_right_for_the_agent_now() -> None:
    """The application changed turn detection under an agent without input guardrails (its
    update, replayed after a reconnection, says create_response on); then the guarded agent
    took over. On the new server the replayed update goes under the agent's configuration (the
    update log's order), so the server still holds responses; and gives them back when an agent
    without input guardrails takes over."""

    async def body() -> None:
        async with (
            serving(transcriber=ScriptedTranscriber()) as server,
            RealtimeSession(
                OPEN,
                url=server.url(),
                config=VAD_TRANSCRIBED,
                wait_for_session_updated=True,
                reconnect=ReconnectPolicy(attempts=3, backoff_s=0.01),
            ) as session,
        ):
            await session.update_session(
                {"audio": {"input": {"turn_detection": {"type": "server_vad", "threshold": 0.6}}}}
            )
            await session.update_agent(GUARDED)
            assert create_response_on_the_wire(session) is False
            await server.connections[-1].inject(Drop())
            await until(session, "reconnected")
            await session.send_message("good night", trigger_response=False)
            await until(
                session,
                lambda e: any(
                    isinstance(i, HistoryMessage) and i.text == "good night"
                    for i in session.history
                ),
            )
            held = server.connections[-1].session.session["audio"]["input"]["turn_detection"]
            assert held["create_response"] is False
            assert create_response_on_the_wire(session) is False
            await session.update_agent(OPEN)
            assert create_response_on_the_wire(session) is True

    run(body(), timeout_s=60)
