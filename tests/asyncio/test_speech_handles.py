"""Speech handles: ``say()`` / ``create_response()`` return one; awaiting it waits until the
speech was played (the playback clock, with an audio output) or interrupted, and says how much
was heard. Against the local server; the tests with audio pop the ring as a device would."""

from __future__ import annotations

import asyncio

from voxwire.agents import RealtimeAgent
from voxwire.asyncio import RealtimeSession, SpeechCreatedEvent, SpeechHandle
from voxwire.asyncio.events import AudioInterruptedEvent, ResponseDoneEvent

from .agent_helpers import agent_session, counting_tool, of_type
from .agent_helpers import settle as settle_tools
from .helpers import MANUAL, RATE_HZ, SLOW, device, poll, run, serving, settle, speaking, until


def speech_created(events: list[object]) -> list[SpeechCreatedEvent]:
    return [e for e in events if isinstance(e, SpeechCreatedEvent)]


def test_say_returns_a_handle_done_at_response_done_without_an_audio_output() -> None:
    async def body() -> None:
        async with serving() as server, RealtimeSession(url=server.url(), config=MANUAL) as session:
            handle = await session.say("Welcome.")
            assert isinstance(handle, SpeechHandle)
            assert (handle.source, handle.user_initiated, handle.done()) == ("say", True, False)
            assert await handle is handle
            events = await settle(session)
            (created,) = speech_created(events)
            assert created.handle is handle
            assert created.user_initiated
            assert handle.response_id == created.response_id
            assert (handle.status, handle.interrupted, handle.error) == ("completed", False, None)
            assert handle.played_ms is None  # a text response: nothing to hear

    run(body())


def test_requests_that_coalesce_follow_the_one_response_that_answers_them() -> None:
    async def body() -> None:
        async with (
            serving(pacing=SLOW) as server,
            RealtimeSession(url=server.url(), config=MANUAL) as session,
        ):
            story = await session.create_response(instructions="tell me a story")
            first = await session.say("One moment.")
            second = await session.say("One moment.")  # the same request, held: one response
            await asyncio.gather(story.wait_for_playout(), first, second)
            assert story.response_id != first.response_id
            assert first.response_id == second.response_id is not None
            assert [h.status for h in (story, first, second)] == ["completed"] * 3

    run(body())


def test_responses_the_session_asked_for_itself_are_not_user_initiated() -> None:
    async def body() -> None:
        weather, _ = counting_tool(answer=lambda city: {"temperature": 21})
        agent = RealtimeAgent(name="Weather", instructions="", tools=[weather])
        async with agent_session(agent) as session:
            await session.send_message("what is the weather")
            events = await settle_tools(session)
            created = speech_created(events)
            assert [(c.source, c.user_initiated) for c in created] == [
                ("response", True),
                ("tool_response", False),
            ]
            follow_up = created[1].handle
            assert follow_up is not None
            await follow_up
            assert (follow_up.user_initiated, follow_up.status) == (False, "completed")

    run(body())


def test_send_message_returns_the_handle_of_the_response_it_asks_for() -> None:
    async def body() -> None:
        async with serving() as server, RealtimeSession(url=server.url(), config=MANUAL) as session:
            assert await session.send_message("hello", trigger_response=False) is None
            handle = await session.send_message("hello again")
            assert handle is not None
            events = await settle(session)
            (created,) = speech_created(events)
            assert (created.handle, created.user_initiated) == (handle, True)
            await handle
            assert (handle.source, handle.status) == ("response", "completed")
            # A raw response.create is the application's too, but untracked: not user-initiated.
            await session.send_raw({"type": "response.create"})
            (raw,) = speech_created(await settle(session))
            assert raw.handle is not None
            assert (raw.user_initiated, raw.handle.user_initiated) == (False, False)

    run(body())


def test_a_request_the_server_refuses_ends_its_handle_with_the_error() -> None:
    async def body() -> None:
        async with serving() as server, RealtimeSession(url=server.url(), config=MANUAL) as session:
            # A text-only server cannot speak: the server answers the create with an error.
            handle = await session.create_response(output_modalities=["audio"])
            await asyncio.wait_for(handle.wait_for_playout(), 10)
            assert handle.response_id is None
            assert handle.error is not None
            assert "without a voice" in handle.error

    run(body())


def test_a_handle_still_waiting_when_the_session_closes_ends_then() -> None:
    async def body() -> None:
        async with (
            serving(pacing=SLOW) as server,
            RealtimeSession(url=server.url(), config=MANUAL) as session,
        ):
            story = await session.create_response(instructions="tell me a story")
            await until(session, "response_started")
        assert story.done()
        assert story.interrupted
        assert story.error is not None
        assert "closed" in story.error

    run(body())


def test_with_an_audio_output_the_handle_waits_until_the_device_played_it() -> None:
    async def body() -> None:
        ring, clock = device(60)
        async with speaking(clock) as session:
            handle = await session.say("Hello there, how are you?")
            await until(session, "response_done")
            assert not handle.done()  # the server is done; the device is not
            assert clock.buffered_samples > RATE_HZ // 4
            segment = session.protocol.audio.segments()[0]
            ring.pop(clock.buffered_samples - RATE_HZ // 10)
            await asyncio.sleep(0.1)  # the watcher polls: 100 ms still to play
            assert not handle.done()
            ring.pop(RATE_HZ)
            await asyncio.wait_for(handle.wait_for_playout(), 5)
            assert (handle.interrupted, handle.status) == (False, "completed")
            assert handle.played_ms == segment.received_ms

    run(body())


def test_a_handle_waiting_for_the_device_when_the_session_closes_ends_then() -> None:
    async def body() -> None:
        _, clock = device(60)
        async with speaking(clock) as session:
            handle = await session.say("Hello there, how are you?")
            await until(session, "response_done")
            assert not handle.done()  # nobody pops the ring: the device never plays it
        await asyncio.wait_for(handle.wait_for_playout(), 5)
        assert (handle.status, handle.interrupted) == ("completed", True)
        assert handle.error is not None
        assert "closed" in handle.error

    run(body())


def test_an_interruption_after_the_response_is_done_ends_the_handle_with_what_was_heard() -> None:
    async def body() -> None:
        ring, clock = device(60)
        async with speaking(clock) as session:
            handle = await session.say("Hello there, this is a rather long sentence to hear.")
            await until(session, "response_done")
            await poll(lambda: clock.buffered_samples > RATE_HZ // 2)
            ring.pop(RATE_HZ * 3 // 10)  # the device played 300 ms, then the user interrupts
            await session.interrupt()
            await asyncio.wait_for(handle.wait_for_playout(), 5)
            assert handle.interrupted
            assert handle.status == "completed"  # the response itself had ended
            assert handle.played_ms == 300

    run(body())


def test_an_interruption_during_the_response_without_an_audio_output() -> None:
    async def body() -> None:
        async with (
            serving(pacing=SLOW, tts="espeak") as server,
            RealtimeSession(
                url=server.url(), config={"audio": {"input": {"turn_detection": None}}}
            ) as session,
        ):
            handle = await session.create_response(instructions="tell me a story")
            events = await until(session, "audio")
            await session.interrupt()
            events += await until(session, "response_done")
            await asyncio.wait_for(handle.wait_for_playout(), 5)
            (cut,) = of_type(events, AudioInterruptedEvent)
            (done,) = of_type(events, ResponseDoneEvent)
            assert (handle.status, done.status) == ("cancelled", "cancelled")
            assert handle.interrupted
            # Without an output, what was received counts as heard: the truncation sent.
            assert handle.played_ms == cut.played_ms
            assert handle.played_ms is not None
            assert handle.played_ms > 0

    run(body())


def test_a_failed_response_ends_its_handle_with_the_servers_reason() -> None:
    """The chat endpoint behind the server is unreachable: the response fails; awaiting its
    handle returns (status failed) and ``error`` says why, in the server's words; the event
    says it too (``ResponseDoneEvent.failure``)."""
    from voxwire.server import ChatCompletionsResponder

    async def body() -> None:
        unreachable = ChatCompletionsResponder("http://127.0.0.1:1/v1", "tiny-1", timeout_s=5)
        async with (
            serving(scenario=None, responder=unreachable) as server,
            RealtimeSession(url=server.url(), config=MANUAL) as session,
        ):
            handle = await session.send_message("hello")
            assert handle is not None
            await asyncio.wait_for(handle.wait_for_playout(), 30)
            assert handle.status == "failed"
            assert handle.error is not None
            assert handle.error.startswith("the response failed: chat endpoint ")
            assert "unreachable" in handle.error
            done = of_type(await settle(session), ResponseDoneEvent)
            assert done[-1].failure is not None
            assert "unreachable" in done[-1].failure

    run(body())
