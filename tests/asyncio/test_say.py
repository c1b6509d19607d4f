"""RealtimeSession.say(): the assistant speaks a given text, gated like any response."""

from __future__ import annotations

import pytest

from voxwire.asyncio import HistoryMessage, RealtimeSession, SpeechCreatedEvent
from voxwire.asyncio.events import AssistantTranscriptDoneEvent

from .helpers import MANUAL, SLOW, run, serving, settle

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
