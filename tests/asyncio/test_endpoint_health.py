"""Endpoint health (asyncio/connection/health.py) with two real local servers on loopback: the
primary is down, the session connects to the fallback and marks the primary unhealthy; the primary
comes back on the same port, a background probe finds it and it is preferred again — the next
connection (a renewal, a reconnection) goes to it; the probes stop on close."""

from __future__ import annotations

import asyncio

from voxwire.asyncio import (
    EndpointHealthEvent,
    EndpointStatus,
    RealtimeSession,
    ReconnectPolicy,
    RenewalPolicy,
    RenewedEvent,
)
from voxwire.server import Drop, RealtimeServer

from .agent_helpers import ask, of_type
from .helpers import MANUAL, assert_only_current_task, run, serving, until
from .renewal_helpers import RecordingConnector, session_messages


async def free_port() -> int:
    """A loopback port a local server listened on and no longer does."""
    async with serving() as server:
        return server.port


def two_endpoint_session(port: int, fallback: RealtimeServer, **options: object) -> RealtimeSession:
    return RealtimeSession(
        url=f"ws://127.0.0.1:{port}/v1/realtime",
        fallback_urls=[fallback.url()],
        config=MANUAL,
        wait_for_session_updated=True,
        **options,  # type: ignore[arg-type]
    )


def test_a_failed_endpoint_is_probed_and_preferred_again_once_it_answers() -> None:
    async def body() -> None:
        port = await free_port()
        async with serving() as fallback:
            session = two_endpoint_session(port, fallback, renewal=RenewalPolicy(after_s=1.5))
            async with session:
                primary_url, fallback_url = session.options.urls
                assert session.url == fallback_url
                events = await ask(session, "hello")
                (marked_down,) = of_type(events, EndpointHealthEvent)
                assert (marked_down.url, marked_down.healthy) == (primary_url, False)
                assert marked_down.error is not None
                down, _ = session.endpoints
                assert isinstance(down, EndpointStatus)
                assert (down.url, down.healthy, down.probing) == (primary_url, False, True)
                assert down.failures >= 1
                assert down.last_error
                assert session.endpoints[1].healthy
                # The primary comes back on the same port: a probe finds it.
                async with serving(port=port) as primary:
                    events = await until(
                        session,
                        lambda e: isinstance(e, EndpointHealthEvent) and e.healthy,
                        timeout_s=5,
                    )
                    assert events[-1].url == primary_url  # type: ignore[union-attr]
                    assert session.endpoints[0] == EndpointStatus(url=primary_url, healthy=True)
                    # The next connection (here the planned renewal) goes to the primary.
                    events = await until(session, "renewed", timeout_s=5)
                    renewed = events[-1]
                    assert isinstance(renewed, RenewedEvent)
                    assert renewed.url == primary_url == session.url
                    await ask(session, "and now")
                    assert [m for m, _ in session_messages(session)] == ["user", "assistant"] * 2
                    assert len(primary.connections) == 1
                    assert len(fallback.connections) == 0
        assert_only_current_task()

    run(body(), timeout_s=30)


def test_a_reconnection_skips_the_unhealthy_endpoint_and_probes_stop_on_close() -> None:
    """The primary stays down: a reconnection after a drop goes straight to the healthy
    fallback (the primary is tried last), and close() stops the probe at once."""

    async def body() -> None:
        port = await free_port()
        async with serving() as fallback:
            policy = ReconnectPolicy(attempts=2, backoff_s=0)
            connector = RecordingConnector()
            session = two_endpoint_session(port, fallback, reconnect=policy, connector=connector)
            async with session:
                primary_url, fallback_url = session.options.urls
                assert connector.attempts == [primary_url, fallback_url]
                await fallback.connections[-1].inject(Drop())
                events = await until(session, "reconnected", timeout_s=5)
                assert events[-1].url == fallback_url  # type: ignore[union-attr]
                # Before the first probe (0.5 s): the healthy fallback was tried first.
                assert connector.attempts == [primary_url, fallback_url, fallback_url]
                # Marked unhealthy once, not again at each failure.
                health = of_type(events, EndpointHealthEvent)
                assert all(e.url == primary_url and not e.healthy for e in health)
                assert session.endpoints[0].probing
                await asyncio.sleep(1.2)  # at least one failed probe
                assert session.endpoints[0].failures >= 2
        assert_only_current_task()

    run(body())
