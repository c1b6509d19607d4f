"""LiveSession reconnection by fork, end to end: a real loopback websocket through a proxy that
kills the connection mid-conversation (tests/fuzz/proxy.py), the local server's Live emulation
storing the session and serving its fork. With a ReconnectPolicy the session forks the stored
session (``reconnecting``, then ``live_reconnected``) and the conversation goes on in the fork;
a fork refused while the lost session is still finalizing is tried again; delegations in flight
are abandoned; without a policy, or when every attempt fails, the session ends."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from tests.fuzz.proxy import HostileProxy, hostile_proxy
from tests.live.samples import SERVER, SESSION
from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import (
    CloseEvent,
    ErrorEvent,
    ReconnectingEvent,
    ReconnectPolicy,
    SessionReconnecting,
    ToolEndEvent,
    ToolStartEvent,
)
from voxwire.asyncio.live import LiveReconnectedEvent, LiveSession
from voxwire.asyncio.live.connection import fork_url
from voxwire.exceptions import ConfigurationError, ConnectionFailed, SessionClosed
from voxwire.server import Pacing, RealtimeServer
from voxwire.server.engines.transcribe import WhisperTranscriber

from .test_live_session import SCENARIO, WEATHER_AGENT, said, speak, until

FAST = ReconnectPolicy(attempts=3, backoff_s=0)
needs_whisper = pytest.mark.skipif(
    not WhisperTranscriber.installed(), reason="needs the transcribe extra (faster-whisper)"
)


@asynccontextmanager
async def behind_proxy(**server_options: Any) -> AsyncIterator[tuple[RealtimeServer, HostileProxy]]:
    server_options.setdefault("pacing", Pacing(audio_pace=0))
    async with (
        RealtimeServer(**server_options) as server,
        hostile_proxy(f"127.0.0.1:{server.port}") as proxy,
    ):
        try:
            yield server, proxy
        finally:
            proxy.upstream_open.set()


def live_url(proxy: HostileProxy) -> str:
    return f"{proxy.url}/v1/live/sessions"


def seen(kind: type) -> Callable[[list[Any]], bool]:
    return lambda events: any(isinstance(e, kind) for e in events)


def run(coro: Any, timeout_s: float = 120.0) -> None:
    asyncio.run(asyncio.wait_for(coro, timeout_s))


@needs_whisper
def test_a_lost_connection_goes_on_in_a_fork_of_the_stored_session() -> None:
    async def body() -> None:
        async with (
            behind_proxy(scenario=SCENARIO, tts="hibari") as (server, proxy),
            LiveSession(WEATHER_AGENT, url=live_url(proxy), reconnect=FAST) as session,
        ):
            assert session.protocol.session is not None
            first = session.protocol.session.id
            assert first in server.live_sessions  # started with store: true
            await speak(session)
            await until(session, lambda events: "Paris." in said(events))
            proxy.cut()
            events = await until(session, seen(LiveReconnectedEvent))
            [reconnecting] = [e for e in events if isinstance(e, ReconnectingEvent)]
            assert (reconnecting.attempt, reconnecting.delay_s) == (1, 0.0)
            assert isinstance(reconnecting.error, ConnectionClosed)
            done = events[-1]
            assert isinstance(done, LiveReconnectedEvent)
            assert session.protocol.session is not None
            assert (done.forked_from, done.session_id) == (first, session.protocol.session.id)
            assert done.session_id != first
            assert done.abandoned_delegations == ()
            assert proxy.paths[-1] == f"/v1/live/sessions/{first}/fork"
            forked = server.live_sessions.get(done.session_id)
            assert forked is not None
            assert [role for role, _ in forked.conversation] == ["user", "assistant"]
            # the conversation goes on in the fork: a second spoken turn, a second tool run
            await speak(session)
            events = await until(session, lambda events: "Paris." in said(events))
            assert not [e for e in events if isinstance(e, ErrorEvent)]
            assert [item.role for item in session.history] == [
                "user",
                "assistant",
                "user",
                "assistant",
            ]
            metrics = session.metrics
            assert (metrics.tool_calls, metrics.delegations) == (2, 2)

    run(body(), 180.0)


def test_a_fork_refused_while_the_lost_session_finalizes_is_tried_again() -> None:
    async def body() -> None:
        policy = ReconnectPolicy(attempts=20, backoff_s=0.05)
        async with behind_proxy(tts=None, transcriber=None) as (server, proxy):
            agent = RealtimeAgent(name="Plain", instructions="Be brief.")
            async with LiveSession(
                agent, url=live_url(proxy), delegation="client", backend=_echo, reconnect=policy
            ) as session:
                await session.add_context("Hello there.", spoken=True)
                await until(session, lambda events: "Hello there." in said(events))
                proxy.upstream_open.clear()  # the server still holds the lost session
                proxy.cut()
                waiting = await until(
                    session,
                    lambda events: any(
                        isinstance(e, ReconnectingEvent) and e.attempt == 2 for e in events
                    ),
                )
                # while reconnecting: audio is dropped, other sends say so
                await session.send_audio(bytes(4800))
                with pytest.raises(SessionReconnecting, match="live_reconnected"):
                    await session.add_context("Anything.")
                proxy.upstream_open.set()
                events = await until(session, seen(LiveReconnectedEvent))
                refusals = [e.error for e in waiting if isinstance(e, ReconnectingEvent)]
                assert isinstance(refusals[0], ConnectionClosed)  # the loss
                assert isinstance(refusals[1], ConnectionFailed)  # the first fork, refused
                assert "still active or finalizing" in str(refusals[1])
                done = events[-1]
                assert isinstance(done, LiveReconnectedEvent)
                assert done.attempt >= 2
                forked = server.live_sessions.get(done.session_id)
                assert forked is not None
                assert forked.conversation == [("assistant", "Hello there.")]
                await session.add_context("Still here.", spoken=True)
                await until(session, lambda events: "Still here." in said(events))
                assert [item.text for item in session.history] == ["Hello there.Still here."]

    run(body())


async def _echo(request: Any) -> str:
    return "Done."


@needs_whisper
def test_a_delegation_in_flight_is_abandoned() -> None:
    release = asyncio.Event()

    @function_tool
    async def get_weather(city: str) -> dict[str, Any]:
        """The weather in a city."""
        await release.wait()
        return {"city": city, "temperature": 21}

    agent = RealtimeAgent(name="Weather", instructions="Answer briefly.", tools=[get_weather])

    async def body() -> None:
        async with (
            behind_proxy(scenario=SCENARIO, tts="hibari") as (_, proxy),
            LiveSession(agent, url=live_url(proxy), reconnect=FAST) as session,
        ):
            await speak(session)
            events = await until(session, seen(ToolStartEvent))
            [delegation] = list(session.protocol.delegations)
            proxy.cut()
            events = await until(session, seen(LiveReconnectedEvent))
            assert events[-1].abandoned_delegations == (delegation.id,)
            release.set()
            events = await until(session, seen(ToolEndEvent))
            await asyncio.sleep(0.3)  # an output sent for it would be refused by now
            await session.add_context("Go on.", spoken=True)
            events = await until(session, lambda events: "Go on." in said(events))
            assert not [e for e in events if isinstance(e, ErrorEvent)]

    run(body(), 180.0)


def test_without_a_policy_or_when_every_attempt_fails_the_session_ends() -> None:
    async def body() -> None:
        agent = RealtimeAgent(name="Plain", instructions="Be brief.")
        async with behind_proxy(tts=None, transcriber=None) as (server, proxy):
            async with LiveSession(
                agent, url=live_url(proxy), delegation="client", backend=_echo
            ) as session:
                assert session.protocol.session is not None
                assert session.protocol.session.id not in server.live_sessions  # not stored
                proxy.cut()
                events = await until(session, seen(CloseEvent))
                close = events[-1]
                assert close.reason == "connection_lost"
                assert isinstance(close.error, ConnectionClosed)
                assert not [e for e in events if isinstance(e, ReconnectingEvent)]
            proxy.upstream_open.clear()  # the lost session never finalizes: every fork refused
            policy = ReconnectPolicy(attempts=2, backoff_s=0)
            async with LiveSession(
                agent, url=live_url(proxy), delegation="client", backend=_echo, reconnect=policy
            ) as session:
                proxy.cut()
                events = await until(session, seen(CloseEvent))
                assert [e.attempt for e in events if isinstance(e, ReconnectingEvent)] == [1, 2]
                close = events[-1]
                assert close.reason == "connection_lost"
                assert isinstance(close.error, ConnectionFailed)
                assert "finalizing" in str(close.error)
                with pytest.raises(SessionClosed, match="not open"):
                    await session.add_context("Anything.")

    run(body())


def test_reconnection_options() -> None:
    with pytest.raises(ConfigurationError, match="always carries the stored conversation"):
        LiveSession(WEATHER_AGENT, reconnect=ReconnectPolicy(restore_history=False))
    assert fork_url("wss://api.openai.com/v1/live/sessions", "sess_1") == (
        "wss://api.openai.com/v1/live/sessions/sess_1/fork"
    )
    assert fork_url("ws://127.0.0.1:9/v1/live/sessions/?x=1", "s") == (
        "ws://127.0.0.1:9/v1/live/sessions/s/fork?x=1"
    )


def test_a_session_closed_for_connection_lost_is_forked_too() -> None:
    """The hosted service may end the session itself with ``session.closed`` reason
    ``connection_lost`` (an upstream disconnection): a mock of it (the hosted service is the one
    thing mocked) ends the first session that way and serves the fork."""
    paths: list[str] = []
    starts: list[dict[str, Any]] = []

    async def hosted(ws: ServerConnection) -> None:
        assert ws.request is not None
        paths.append(ws.request.path)
        start = json.loads(await ws.recv())
        starts.append(start)
        forked = ws.request.path.endswith("/fork")
        session = {**SESSION, "id": "sess_2" if forked else "sess_1", "store": True}
        await ws.send(json.dumps({**SERVER["session.started"], "session": session}))
        if not forked:
            closed = {**SERVER["session.closed"], "reason": "connection_lost", "session": session}
            await ws.send(json.dumps(closed))
        await ws.wait_closed()

    async def body() -> None:
        async with serve(hosted, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            url = f"ws://127.0.0.1:{port}/v1/live/sessions"
            async with LiveSession(WEATHER_AGENT, url=url, reconnect=FAST) as session:
                events = await until(session, seen(LiveReconnectedEvent))
                done = events[-1]
                assert (done.forked_from, done.session_id) == ("sess_1", "sess_2")
                [reconnecting] = [e for e in events if isinstance(e, ReconnectingEvent)]
                assert reconnecting.error is None  # the server said so; nothing failed here
        assert paths == ["/v1/live/sessions", "/v1/live/sessions/sess_1/fork"]
        assert starts[0]["session"]["store"] is True
        assert starts[1]["session"] == {}

    run(body())
