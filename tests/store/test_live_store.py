"""LiveSession(store=...) records a GPT-Live conversation into the stores RealtimeSession uses
(SQLite, PostgreSQL): what the user said, what the listener heard, the delegation, the backend's
function call and the output sent back, in order; LiveSession.resume(store, id) goes on with it
(the new Live session gets it as its initial history) and records into the same conversation.
End to end against the local server's Live emulation over a real loopback websocket."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.asyncio.live.test_live_session import (
    SCENARIO,
    WEATHER_AGENT,
    said,
    speak,
    until,
)
from voxwire.agents import RealtimeAgent
from voxwire.asyncio.live import DelegationRequest, LiveSession
from voxwire.exceptions import ConnectionFailed, ConversationExists, InvalidState, StoreError
from voxwire.server import Pacing, RealtimeServer
from voxwire.server.engines.transcribe import WhisperTranscriber

from .conftest import Backend

PLAIN = RealtimeAgent(name="Plain", instructions="Be brief.")


async def _backend(request: DelegationRequest) -> str:
    return "Done."


def run(coro: Any, timeout_s: float = 120.0) -> None:
    asyncio.run(asyncio.wait_for(coro, timeout_s))


def wires(snapshot: Any) -> list[tuple[str, str | None, str]]:
    return [(i.type, i.role, i.origin) for i in snapshot.items]


def test_a_live_conversation_is_stored_and_resumed(backend: Backend) -> None:
    async def body() -> None:
        async with RealtimeServer(
            tts=None, transcriber=None, pacing=Pacing(audio_pace=0)
        ) as server:
            url = f"{server.base_url}/live/sessions"
            store = await backend.open()
            try:
                session = LiveSession(
                    PLAIN, url=url, delegation="client", backend=_backend, store=store
                )
                with pytest.raises(InvalidState, match="before connect"):
                    session.snapshot()
                async with session:
                    conversation = session.conversation_id
                    assert conversation is not None
                    await session.add_context("Hello there.", spoken=True)
                    await until(session, lambda seen: "Hello there." in said(seen))
                    # the lease is held: a second writer is refused
                    with pytest.raises(StoreError):
                        async with LiveSession.resume(
                            store,
                            conversation,
                            PLAIN,
                            url=url,
                            delegation="client",
                            backend=_backend,
                        ):
                            pass
                stored = await store.load(conversation)
                assert wires(stored) == [("message", "assistant", "model")]
                assert stored.items[0].wire["content"] == [
                    {"type": "output_text", "text": "Hello there."}
                ]
                assert stored.agent == "Plain"
                resumed = LiveSession.resume(
                    store, conversation, PLAIN, url=url, delegation="client", backend=_backend
                )
                async with resumed:
                    assert resumed.conversation_id == conversation
                    started = resumed.protocol.session
                    assert started is not None
                    assert started.input == [
                        {
                            "id": stored.items[0].id,
                            "type": "message",
                            "role": "assistant",
                            "content": [{"type": "output_text", "text": "Hello there."}],
                        }
                    ]
                    assert [i.text for i in resumed.history] == ["Hello there."]
                    await resumed.add_context("Welcome back.", spoken=True)
                    await until(resumed, lambda seen: "Welcome back." in said(seen))
                    snapshot = resumed.snapshot()
                    assert [i.wire["content"][0]["text"] for i in snapshot.items] == [
                        "Hello there.",
                        "Welcome back.",
                    ]
                stored = await store.load(conversation)
                assert [i.wire["content"][0]["text"] for i in stored.items] == [
                    "Hello there.",
                    "Welcome back.",
                ]
                # a new session on a conversation that holds items is refused, saying how
                again = LiveSession(
                    PLAIN,
                    url=url,
                    delegation="client",
                    backend=_backend,
                    store=store,
                    conversation_id=conversation,
                )
                with pytest.raises(ConversationExists, match=r"LiveSession\.resume"):
                    await again.connect()
                # a resume the server refuses gives the lease back: resuming works after it
                refused = LiveSession.resume(
                    store,
                    conversation,
                    PLAIN,
                    url=url,
                    model="gpt-realtime",
                    delegation="client",
                    backend=_backend,
                )
                with pytest.raises(ConnectionFailed, match="refused"):
                    await refused.connect()
                async with LiveSession.resume(
                    store, conversation, PLAIN, url=url, delegation="client", backend=_backend
                ) as last:
                    assert len(last.history) == 2
            finally:
                await store.close()

    run(body())


@pytest.mark.skipif(
    not WhisperTranscriber.installed(), reason="needs the transcribe extra (faster-whisper)"
)
def test_delegations_and_tool_calls_are_stored_in_order(backend: Backend) -> None:
    async def body() -> None:
        async with RealtimeServer(scenario=SCENARIO, tts="hibari") as server:
            url = f"{server.base_url}/live/sessions"
            store = await backend.open()
            try:
                async with LiveSession(WEATHER_AGENT, url=url, store=store) as session:
                    conversation = session.conversation_id
                    assert conversation is not None
                    await speak(session)
                    await until(session, lambda seen: "Paris." in said(seen))
                stored = await store.load(conversation)
                assert wires(stored) == [
                    ("message", "user", "caller"),
                    ("delegation", None, "model"),
                    ("function_call", None, "model"),
                    ("function_call_output", None, "sdk"),
                    ("message", "assistant", "model"),
                ]
                user, delegation, call, output, answer = stored.items
                assert "weather" in user.wire["content"][0]["text"].lower()
                assert delegation.wire["target"] == "responses"
                assert call.wire["name"] == "get_weather"
                assert call.response_id == delegation.wire["response_id"]
                assert output.wire["call_id"] == call.wire["call_id"]
                assert output.wire["output"] == '{"city":"Paris","temperature":21}'
                assert answer.wire["content"][0]["text"] == "It is 21 degrees in Paris."
                async with LiveSession.resume(store, conversation, WEATHER_AGENT, url=url) as again:
                    started = again.protocol.session
                    assert started is not None
                    assert started.input is not None
                    roles = [item["role"] for item in started.input]
                    assert roles == ["user", "developer", "assistant"]
                    note = started.input[1]["content"][0]["text"]
                    assert "get_weather" in note
                    assert '"temperature":21' in note
            finally:
                await store.close()

    run(body(), 180.0)
