"""RealtimeSession.say(): the assistant speaks a given text, gated like any response."""

from __future__ import annotations

import pytest

from voxwire.asyncio import HistoryMessage, RealtimeSession, SpeechCreatedEvent
from voxwire.asyncio.events import AssistantTranscriptDoneEvent
from voxwire.testing import ScriptedServer

from .helpers import MANUAL, SLOW, run, serving, settle, until

WELCOME = "Welcome to the weather desk. Ask me about any city."


def assistant_texts(session: RealtimeSession) -> list[str]:
    return [
        m.text for m in session.history if isinstance(m, HistoryMessage) and m.role == "assistant"
    ]


def test_say_speaks_the_text_verbatim_with_its_source() -> None:
    async def body() -> None:
        async with serving() as server, RealtimeSession(url=server.url(), config=MANUAL) as session:
            await session.say(WELCOME)
            events = await settle(session)
            (created,) = [e for e in events if isinstance(e, SpeechCreatedEvent)]
            assert created.source == "say"
            done = [e for e in events if isinstance(e, AssistantTranscriptDoneEvent)]
            assert [e.transcript for e in done] == [WELCOME]
            assert assistant_texts(session) == [WELCOME]

    run(body())


def test_say_during_a_response_waits_its_turn() -> None:
    async def body() -> None:
        async with (
            serving(pacing=SLOW) as server,
            RealtimeSession(url=server.url(), config=MANUAL) as session,
        ):
            await session.send_message("tell me a story")
            await session.say("One moment, please.")
            events = await settle(session)
            sources = [e.source for e in events if isinstance(e, SpeechCreatedEvent)]
            assert sources == ["response", "say"]
            texts = assistant_texts(session)
            assert texts[-1] == "One moment, please."
            assert texts[0].startswith("Once upon a time")
            assert not [e for e in events if e.type == "error"]

    run(body())


def test_say_needs_text() -> None:
    async def body() -> None:
        async with serving() as server, RealtimeSession(url=server.url(), config=MANUAL) as session:
            with pytest.raises(ValueError, match="needs text"):
                await session.say("  ")

    run(body())


def test_a_say_beaten_by_server_vad_is_spoken_after_the_winner_without_an_error() -> None:
    """Server VAD starts a response just before the server reads the say's response.create and
    rejects it (``conversation_already_has_active_response``, as the hosted service words it):
    the session asks again with the same parameters once the winner is done, and the
    application sees no error — the session did not cause one."""
    server = ScriptedServer()

    async def body() -> None:
        async with RealtimeSession(connector=server.connect, config=MANUAL) as session:
            await session.say(WELCOME)
            create = await server.wait_for("response.create")
            winner = await server.text_response("Yes?", finish=False)
            await server.emit(
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "code": "conversation_already_has_active_response",
                        "message": f"Conversation already has an active response in progress: "
                        f"{winner}. Wait until the response is finished before creating a new one.",
                        "event_id": create["event_id"],
                    },
                }
            )
            await server.emit(
                {
                    "type": "response.done",
                    "response": {
                        "id": winner,
                        "object": "realtime.response",
                        "status": "completed",
                    },
                }
            )
            events = await until(session, "response_done")  # the winner's: an error came before
            again = await server.wait_for("response.create", count=2)
            assert again["response"] == create["response"]
            assert again["event_id"] != create["event_id"]
            await server.text_response(WELCOME)
            events += await until(session, lambda e: assistant_texts(session)[-1:] == [WELCOME])
            assert not [e for e in events if e.type == "error"]

    run(body())
