"""The user's ``away`` state on the session's (virtual) clock, the agent's ``on_user_away`` hook,
and the user's speech ending it — against the local server with server VAD on real speech."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from voxwire.agents import RealtimeAgent
from voxwire.asyncio import RealtimeSession, UserStateChangedEvent
from voxwire.asyncio.events import ResponseDoneEvent, SessionEvent
from voxwire.exceptions import ConfigurationError

from .helpers import RATE_HZ, run, serving, speech_pcm, until

VAD = {
    "output_modalities": ["text"],
    "audio": {"input": {"turn_detection": {"type": "server_vad"}}},
}


class VirtualClock:
    """The session's clock: it moves only when the test says so."""

    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def user_states(events: list[SessionEvent]) -> list[tuple[str, str]]:
    return [(e.old_state, e.new_state) for e in events if isinstance(e, UserStateChangedEvent)]


def test_away_after_the_silence_on_the_sessions_clock_then_back_when_the_user_speaks() -> None:
    checked_in: list[Any] = []

    async def check_in(session: RealtimeSession) -> None:
        checked_in.append(session)
        await session.say("Are you still there?")

    agent = RealtimeAgent(name="Caring", on_user_away=check_in)
    clock = VirtualClock()

    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(
                agent,
                url=server.url(),
                config=VAD,
                clock=clock,
                user_away_timeout_s=30.0,
                wait_for_session_updated=True,
            ) as session,
        ):
            assert session.user_state == "listening"
            # Wall time passes, the session's clock does not: nobody is away.
            clock.now_s += 29.9
            await asyncio.sleep(0.6)
            assert session.user_state == "listening"
            assert not checked_in
            clock.now_s += 0.1
            events = await until(session, "user_state_changed")
            assert user_states(events) == [("listening", "away")]
            # The agent's hook checks in: the model speaks to the absent user.
            events = await until(session, "response_done")
            assert checked_in == [session]
            assert any(isinstance(e, ResponseDoneEvent) for e in events)
            assert session.user_state == "away"  # the agent talking does not bring them back
            # The user speaks: away ends.
            pcm = bytes(RATE_HZ * 2 * 3 // 10) + speech_pcm() + bytes(RATE_HZ * 2 * 8 // 10)
            for start in range(0, len(pcm), 4800):
                await session.send_audio(pcm[start : start + 4800])
            events = await until(
                session,
                lambda e: isinstance(e, UserStateChangedEvent) and e.new_state == "listening",
            )
            assert user_states(events) == [("away", "speaking"), ("speaking", "listening")]

    run(body())


def test_without_the_option_nobody_is_ever_away() -> None:
    clock = VirtualClock()

    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(
                url=server.url(), config=VAD, clock=clock, wait_for_session_updated=True
            ) as session,
        ):
            clock.now_s += 3600.0
            await session.send_message("hello")  # server events arrive: the state is checked
            events = await until(session, "response_done")
            assert user_states(events) == []
            assert session.user_state == "listening"

    run(body())


def test_a_failing_hook_is_reported_and_the_session_goes_on() -> None:
    def broken(session: RealtimeSession) -> None:
        raise RuntimeError("the check-in broke")

    clock = VirtualClock()

    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(
                RealtimeAgent(name="Broken", on_user_away=broken),
                url=server.url(),
                config=VAD,
                clock=clock,
                user_away_timeout_s=5.0,
                wait_for_session_updated=True,
            ) as session,
        ):
            clock.now_s += 5.0
            events = await until(session, "error")
            assert user_states(events) == [("listening", "away")]
            assert "the check-in broke" in str(events[-1].exception)  # type: ignore[union-attr]
            await session.send_message("hello")
            await until(session, "response_done")

    run(body())


@pytest.mark.parametrize("timeout_s", [0, -1.0, True, "30"])
def test_a_bad_timeout_fails_at_construction(timeout_s: Any) -> None:
    with pytest.raises(ConfigurationError, match="user_away_timeout_s"):
        RealtimeSession(user_away_timeout_s=timeout_s)


def test_a_hook_that_is_not_callable_fails_at_declaration() -> None:
    with pytest.raises(ConfigurationError, match="on_user_away"):
        RealtimeAgent(name="Odd", on_user_away="call them")  # type: ignore[arg-type]
