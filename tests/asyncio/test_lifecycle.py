"""RealtimeSession lifecycle: construction, connect, close, iteration, and the failure paths
(entry failing after acquiring, close while connecting or while iterators wait, clean and
abnormal ends of the connection) — over a real loopback websocket."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time

import pytest
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from voxwire.agents import RealtimeAgent, output_guardrail
from voxwire.asyncio import (
    DEFAULT_URL,
    CloseEvent,
    ConnectionFailed,
    ConnectRequest,
    ErrorEvent,
    RealtimeSession,
    SessionClosed,
    SessionEvent,
    SessionState,
    Transport,
    TransportClosed,
)
from voxwire.exceptions import ConfigurationError, InvalidState

from .helpers import (
    AUDIO_MANUAL,
    FAST,
    MANUAL,
    assert_only_current_task,
    drain,
    peer,
    run,
    serving,
    session_created,
    session_tasks,
    until,
)

# --- construction ---------------------------------------------------------------------------------


def test_construction_has_no_side_effects() -> None:
    calls: list[str] = []

    def key() -> str:
        calls.append("key")
        return "sk"

    def instructions(agent: RealtimeAgent) -> str:
        calls.append("instructions")
        return "hi"

    async def body() -> None:
        before = asyncio.all_tasks()
        session = RealtimeSession(
            RealtimeAgent(name="a", instructions=instructions), api_key=key, url="ws://h/x"
        )
        assert asyncio.all_tasks() == before
        assert session.state is SessionState.NEW
        assert session.history == []
        await session.close()  # closing a session that never connected is fine
        assert session.state is SessionState.CLOSED
        assert [e async for e in session] == []

    run(body())
    assert calls == []


def test_endpoint_options() -> None:
    assert RealtimeSession().url == DEFAULT_URL + "?model=gpt-realtime"
    assert RealtimeSession(model="gpt-realtime-mini").url.endswith("?model=gpt-realtime-mini")
    assert RealtimeSession(call_id="rtc_1").url == DEFAULT_URL + "?call_id=rtc_1"
    assert RealtimeSession(url="ws://h:1/v1/realtime?x=1", model="m").url == (
        "ws://h:1/v1/realtime?x=1&model=m"
    )
    with pytest.raises(ConfigurationError, match="model and call_id are exclusive"):
        RealtimeSession(model="gpt-realtime", call_id="rtc_1")
    with pytest.raises(ConfigurationError, match="ws:// or wss://"):
        RealtimeSession(url="https://api.openai.com/v1/realtime")
    with pytest.raises(ConfigurationError, match="max_queued_events"):
        RealtimeSession(max_queued_events=0)
    with pytest.raises(ConfigurationError, match=r"audio\.output\.speed"):
        RealtimeSession(config={"audio": {"output": {"speed": 9.0}}})


def test_api_key_never_shown() -> None:
    session = RealtimeSession(api_key="sk-very-secret", headers={"api-key": "azure-secret"})
    assert "secret" not in repr(session)
    request = ConnectRequest(
        url="wss://x", headers={"Authorization": "Bearer sk-very-secret", "api-key": "azure-secret"}
    )
    assert "secret" not in repr(request)


# --- connecting -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["text", "sync", "async", "env"])
def test_api_key_sources(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async def async_key() -> str:
        return "sk-local"

    sources = {"text": "sk-local", "sync": lambda: "sk-local", "async": async_key, "env": None}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")

    async def body() -> None:
        async with (
            serving(token="sk-local") as server,
            RealtimeSession(url=server.url(), api_key=sources[kind]) as session,
        ):
            assert session.state is SessionState.OPEN

    run(body())


def test_wrong_key_fails_with_the_status_and_releases_everything(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def body() -> None:
        async with serving(token="sk-local") as server:
            session = RealtimeSession(url=server.url(), api_key="sk-wrong-secret")
            with (
                caplog.at_level(logging.DEBUG),
                pytest.raises(ConnectionFailed, match="HTTP 401"),
            ):
                await session.connect()
            assert session.state is SessionState.CLOSED
            assert session_tasks() == []
            assert [e.type async for e in session] == ["close"]
        assert_only_current_task()

    run(body())
    assert "Authorization" in caplog.text  # the headers were logged ...
    assert "sk-wrong-secret" not in caplog.text  # ... without the key


def test_hosted_service_without_a_key_fails_before_connecting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    async def body() -> None:
        session = RealtimeSession()
        with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
            await session.connect()
        assert session.state is SessionState.CLOSED

    run(body())


def test_connection_refused_is_connection_failed() -> None:
    async def body() -> None:
        async with serving() as server:
            url = server.url()
        session = RealtimeSession(url=url)  # nothing listens there any more
        with pytest.raises(ConnectionFailed, match="could not connect"):
            await session.connect()
        assert_only_current_task()

    run(body())


def test_connect_sends_the_initial_update_and_can_wait_for_its_acknowledgement() -> None:
    agent = RealtimeAgent(name="greeter", instructions="Be brief.", voice="marin")

    async def body() -> None:
        async with serving() as server:
            async with RealtimeSession(
                agent, url=server.url(), config=MANUAL, wait_for_session_updated=True
            ) as session:
                acknowledged = session.protocol.session
                assert acknowledged is not None
                assert acknowledged.instructions == "Be brief."
                assert session.agent_state == "idle"  # turn detection off
            async with RealtimeSession(agent, url=server.url()) as session:
                # Sent, not yet acknowledged: the server's answer comes as events.
                events = await until(session, lambda e: e.type == "agent_state_changed")
                assert events[-1].type == "agent_state_changed"

    run(body())


def test_rejected_configuration_fails_connect_and_releases_everything() -> None:
    async def body() -> None:
        async with serving() as server:
            session = RealtimeSession(
                RealtimeAgent(name="a", voice="no-such-voice"),
                url=server.url(),
                wait_for_session_updated=True,
            )
            with pytest.raises(ConfigurationError, match="rejected the session configuration"):
                await session.connect()
            assert session.state is SessionState.CLOSED
            assert session_tasks() == []
        assert_only_current_task()

    run(body())


def test_instructions_failing_after_the_connection_opened_release_it() -> None:
    def broken(agent: RealtimeAgent) -> str:
        raise RuntimeError("no instructions today")

    async def body() -> None:
        async with serving() as server:
            session = RealtimeSession(
                RealtimeAgent(name="a", instructions=broken), url=server.url()
            )
            with pytest.raises(RuntimeError, match="no instructions today"):
                async with session:
                    pytest.fail("the body must not run")
            assert session.state is SessionState.CLOSED
            assert session_tasks() == []
            with pytest.raises(InvalidState, match="connects once"):
                await session.connect()
        assert_only_current_task()

    run(body())


def test_connect_cancelled_midway_releases_everything() -> None:
    entered = asyncio.Event()

    async def never(agent: RealtimeAgent) -> str:
        entered.set()
        await asyncio.Event().wait()
        return "unreachable"

    async def body() -> None:
        async with serving() as server:
            session = RealtimeSession(RealtimeAgent(name="a", instructions=never), url=server.url())
            connecting = asyncio.create_task(session.connect())
            await entered.wait()  # the connection and the receive loop exist now
            connecting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await connecting
            assert session.state is SessionState.CLOSED
            assert session_tasks() == []
        assert_only_current_task()

    run(body())


def test_close_while_connecting() -> None:
    entered = asyncio.Event()

    async def slow(agent: RealtimeAgent) -> str:
        entered.set()
        await asyncio.sleep(0.05)
        return "hi"

    async def body() -> None:
        async with serving() as server:
            session = RealtimeSession(RealtimeAgent(name="a", instructions=slow), url=server.url())
            connecting = asyncio.create_task(session.connect())
            await entered.wait()
            await session.close()
            assert session.state is SessionState.CLOSED
            with pytest.raises(SessionClosed, match="closed while connecting"):
                await connecting
            assert session_tasks() == []
        assert_only_current_task()

    run(body())


# --- closing --------------------------------------------------------------------------------------


def test_close_is_idempotent_concurrent_and_wakes_every_iterator() -> None:
    async def body() -> None:
        async with serving() as server:
            session = RealtimeSession(url=server.url(), config=MANUAL)
            await session.connect()
            await until(session, "agent_state_changed")

            async def iterate() -> list[str]:
                return [event.type async for event in session]

            iterators = [asyncio.create_task(iterate()) for _ in range(3)]
            await asyncio.sleep(0.05)  # all three wait in the queue now
            await asyncio.gather(session.close(), session.close(), session.close())
            await session.close()
            results = await asyncio.gather(*iterators)
            seen = [kind for result in results for kind in result]
            assert seen.count("close") == 1
            assert session.close_event == CloseEvent(reason="client_closed")
            assert session_tasks() == []
            with pytest.raises(SessionClosed):
                await session.send_message("too late")
        assert_only_current_task()

    run(body())


def test_close_from_another_task_and_cancelled_close_still_completes() -> None:
    async def body() -> None:
        async with serving() as server:
            session = RealtimeSession(url=server.url(), config=MANUAL)
            await session.connect()
            closer = asyncio.create_task(session.close())
            await asyncio.sleep(0)
            closer.cancel()  # the caller gives up; the shutdown goes on
            with pytest.raises(asyncio.CancelledError):
                await closer
            await session.close()  # waits for the same shutdown
            assert session.state is SessionState.CLOSED
            assert session_tasks() == []
        assert_only_current_task()

    run(body())


def test_async_with_closes_and_leaves_no_task() -> None:
    async def body() -> None:
        async with serving() as server:
            async with RealtimeSession(url=server.url(), config=MANUAL) as session:
                await session.send_message("hello")
                await until(session, "response_done")
            assert session.state is SessionState.CLOSED
            assert session_tasks() == []
            events = await drain(session)
            assert events[-1] == CloseEvent(reason="client_closed")
        assert_only_current_task()

    run(body())


def test_misuse_raises_at_once() -> None:
    async def body() -> None:
        session = RealtimeSession(url="ws://127.0.0.1:9/v1/realtime")
        with pytest.raises(InvalidState, match="connect"):
            await session.send_message("not yet")
        with pytest.raises(InvalidState, match="connect"):
            await session.send_audio(b"\x00\x00")

    run(body())


# --- the end of the connection --------------------------------------------------------------------


def test_clean_server_close_ends_iteration_after_draining() -> None:
    async def body() -> None:
        async with (
            serving(max_session_s=0.3) as server,
            RealtimeSession(url=server.url(), config=MANUAL) as session,
        ):
            events = await drain(session)
            types = [e.type for e in events]
            assert "error" in types  # session_expired, handed out before the end
            expired = next(e for e in events if isinstance(e, ErrorEvent))
            assert expired.code == "session_expired"
            close = events[-1]
            assert isinstance(close, CloseEvent)
            assert close.reason == "server_closed"
            assert close.error is None
            assert close.code == 1000
            assert session.state is SessionState.CLOSED
            with pytest.raises(SessionClosed):
                await session.send_message("anyone?")
        assert_only_current_task()

    run(body())


def test_abnormal_close_yields_close_with_the_error_and_reason() -> None:
    async def dying(ws: ServerConnection) -> None:
        await ws.send(session_created())
        await ws.recv()  # the initial session.update
        await asyncio.sleep(0.05)  # let connect() return first
        await ws.close(code=1011, reason="model crashed")

    async def body() -> None:
        async with peer(dying) as url, RealtimeSession(url=url) as session:
            events = await drain(session)
            close = events[-1]
            assert isinstance(close, CloseEvent)
            assert close.reason == "connection_lost"
            assert isinstance(close.error, TransportClosed)
            assert close.code == 1011
            assert "model crashed" in close.detail
            assert session_tasks() == []

    run(body())


def test_malformed_server_frames_are_errors_and_the_session_goes_on() -> None:
    async def garbage(ws: ServerConnection) -> None:
        await ws.send(session_created())
        await ws.recv()
        await asyncio.sleep(0.05)  # let connect() return first
        await ws.send("{not json")
        await ws.send('{"type": "response.output_audio.delta", "delta": 5}')
        await ws.send('{"type": "something.new", "event_id": "e"}')
        await ws.send(session_created())
        await ws.close()

    async def body() -> None:
        async with peer(garbage) as url, RealtimeSession(url=url) as session:
            events = await drain(session)
            errors = [e for e in events if isinstance(e, ErrorEvent)]
            assert [e.source for e in errors] == ["protocol", "protocol"]
            assert all(e.recoverable for e in errors)
            assert events[-1] == CloseEvent(
                reason="server_closed", code=1000, detail="connection closed with code 1000"
            )

    run(body())


class _BrokenTransport:
    """A transport whose receive fails in a way no transport should."""

    def __init__(self) -> None:
        self.closed = False

    async def send(self, frame: str) -> None:
        pass

    async def recv(self) -> str | bytes:
        await asyncio.sleep(0)
        raise RuntimeError("receive exploded")

    async def close(self) -> None:
        self.closed = True


def test_receive_loop_failure_becomes_a_close_event_not_a_hang() -> None:
    transport = _BrokenTransport()

    async def connector(request: ConnectRequest) -> Transport:
        return transport

    async def body() -> None:
        async with RealtimeSession(url="ws://x/v1/realtime", connector=connector) as session:
            events = await drain(session)
            close = events[-1]
            assert isinstance(close, CloseEvent)
            assert close.reason == "error"
            assert isinstance(close.error, RuntimeError)
        assert transport.closed
        assert_only_current_task()

    run(body())


def test_connect_times_out_and_releases_everything() -> None:
    async def hanging(request: ConnectRequest) -> Transport:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def body() -> None:
        session = RealtimeSession(url="ws://x/v1/realtime", connector=hanging, open_timeout_s=0.05)
        with pytest.raises(ConnectionFailed, match="timed out"):
            await session.connect()
        assert session.state is SessionState.CLOSED
        assert_only_current_task()

    run(body())


def test_close_aborts_a_slow_handshake_at_once() -> None:
    started = asyncio.Event()
    aborted = asyncio.Event()

    async def hanging(request: ConnectRequest) -> Transport:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            aborted.set()
        raise AssertionError("unreachable")

    async def body() -> None:
        # The handshake timeout is far away: close() must not wait for it.
        session = RealtimeSession(url="ws://x/v1/realtime", connector=hanging, open_timeout_s=600)
        connecting = asyncio.create_task(session.connect())
        await started.wait()
        await asyncio.wait_for(session.close(), 10)
        assert aborted.is_set()
        with pytest.raises(SessionClosed, match="closed while connecting"):
            await connecting
        assert session.state is SessionState.CLOSED
        assert_only_current_task()

    run(body())


def test_connection_lost_while_waiting_for_session_updated() -> None:
    from voxwire.testing import ScriptedServer

    async def body() -> None:
        server = ScriptedServer(echo_session_updates=False)
        session = RealtimeSession(connector=server.connect, wait_for_session_updated=True)
        connecting = asyncio.create_task(session.connect())
        await server.wait_for("session.update")
        await server.drop("reset by peer")
        with pytest.raises(SessionClosed, match="reset by peer"):
            await connecting
        assert session.state is SessionState.CLOSED
        assert session_tasks() == []
        assert_only_current_task()

    run(body())


def test_fallback_endpoints_are_tried_in_order() -> None:
    async def body() -> None:
        async with serving() as dead:
            dead_url = dead.url()
        async with serving() as server:
            session = RealtimeSession(url=dead_url, fallback_urls=[server.url()], config=MANUAL)
            async with session:
                assert session.url == server.url()
                await session.send_message("hello")
                await until(session, "response_done")
            failing = RealtimeSession(url=dead_url, fallback_urls=[dead_url])
            with pytest.raises(ConnectionFailed, match="every endpoint failed"):
                await failing.connect()
        assert_only_current_task()

    run(body())


# --- closing during a response: no spurious error, quick against any server ---------------------


def test_close_while_a_guarded_response_streams_emits_no_error() -> None:
    """The output guardrail runs on every delta; close() comes while one check runs and more
    deltas arrive: the session stops receiving before it winds its tasks down, so no delta
    starts work the closing session would refuse (that used to surface as an error event)."""

    async def slow_check(agent: object, text: str) -> bool:
        await asyncio.sleep(0.05)
        return False

    agent = RealtimeAgent(name="guarded", output_guardrails=[output_guardrail(slow_check)])

    async def body() -> None:
        async with serving(pacing=FAST, tts="espeak") as server:
            session = RealtimeSession(
                agent, url=server.url(), config=AUDIO_MANUAL, guardrail_debounce_chars=1
            )
            await session.connect()
            await session.send_message("tell me a story")
            seen: list[SessionEvent] = []
            for _ in range(5):
                seen += await until(session, "assistant_transcript_delta")
            started = time.monotonic()
            await session.close()
            assert time.monotonic() - started < 1.0
            seen += await drain(session)
            assert [e for e in seen if isinstance(e, ErrorEvent)] == []
            assert isinstance(seen[-1], CloseEvent)
            assert seen[-1].reason == "client_closed"
        assert_only_current_task()

    run(body())


def _delta_frame(n: int) -> str:
    return json.dumps(
        {
            "type": "response.output_audio.delta",
            "event_id": f"event_d{n}",
            "response_id": "resp_1",
            "item_id": "item_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "AAAA" * 4096,
        }
    )


def test_close_against_a_flooding_server_returns_within_a_second() -> None:
    """The server keeps sending (a response's audio) and answers the close frame when it reads
    it: the close handshake completes at once because the client reads (and drops) what is
    still queued before the server's close frame."""

    async def flooding(ws: ServerConnection) -> None:
        await ws.send(session_created())
        n = 0
        with contextlib.suppress(ConnectionClosed):
            while True:
                n += 1
                await ws.send(_delta_frame(n))

    async def body() -> None:
        async with peer(flooding) as url:
            session = RealtimeSession(url=url, config=MANUAL, close_timeout_s=5.0)
            await session.connect()
            await asyncio.sleep(0.3)  # the socket and the client's queue fill up
            started = time.monotonic()
            await session.close()
            assert time.monotonic() - started < 1.0
        assert_only_current_task()

    run(body())


def test_close_against_a_server_that_never_answers_returns_within_close_timeout() -> None:
    released = asyncio.Event()

    async def deaf(ws: ServerConnection) -> None:
        await ws.send(session_created())
        ws.transport.pause_reading()  # never reads the close frame, never answers it
        await released.wait()

    async def body() -> None:
        async with peer(deaf) as url:
            session = RealtimeSession(url=url, config=MANUAL, close_timeout_s=0.5)
            await session.connect()
            started = time.monotonic()
            await session.close()
            assert time.monotonic() - started < 0.5 + 0.5
            assert session.state is SessionState.CLOSED
            assert session_tasks() == []
            released.set()

    run(body())
