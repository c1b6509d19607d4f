"""Output guardrails: checks over the growing transcript cut the response, report once per
response however many checks trip concurrently, tell the model and ask again; a guardrail that
raises or cancels itself is reported and the session goes on; close leaves no task."""

from __future__ import annotations

import asyncio

from tests.asyncio.agent_helpers import agent_session, ask, of_type
from tests.asyncio.helpers import SLOW, assert_only_current_task, run, until
from voxwire.agents import GuardrailResult, RealtimeAgent, output_guardrail
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import (
    ErrorEvent,
    GuardrailTrippedEvent,
    ResponseDoneEvent,
    SpeechCreatedEvent,
)
from voxwire.asyncio.events.history import HistoryMessage
from voxwire.testing import ScriptedServer


def test_a_tripped_guardrail_cuts_the_response_and_asks_again() -> None:
    checked: list[str] = []
    tripped_once = False

    @output_guardrail(name="no_fairy_tales")
    def no_fairy_tales(agent: RealtimeAgent, text: str) -> GuardrailResult:
        nonlocal tripped_once
        checked.append(text)
        trip = "upon" in text and not tripped_once
        tripped_once = tripped_once or trip
        return GuardrailResult(tripwire_triggered=trip, output_info={"length": len(text)})

    agent = RealtimeAgent(name="teller", output_guardrails=[no_fairy_tales])

    async def body() -> None:
        async with agent_session(agent, pacing=SLOW, guardrail_debounce_chars=20) as session:
            events = await ask(session, "tell me a story")
            (trip,) = of_type(events, GuardrailTrippedEvent)
            assert trip.guardrails == ("no_fairy_tales",)
            assert "upon" in trip.transcript
            assert trip.results[0].output_info == {"length": len(trip.transcript)}
            done = of_type(events, ResponseDoneEvent)
            assert [d.status for d in done] == ["cancelled", "completed"]
            assert [e.source for e in of_type(events, SpeechCreatedEvent)] == [
                "response",
                "guardrail",
            ]
            system = [
                m for m in session.history if isinstance(m, HistoryMessage) and m.role == "system"
            ]
            assert len(system) == 1
            assert "no_fairy_tales" in system[0].text
            # Checked as the transcript grew, not once per delta and not only at the end.
            assert 1 < len(checked) < 40
            assert not of_type(events, ErrorEvent)

    run(body())


def test_concurrent_checks_trip_once_per_response() -> None:
    entered = 0
    three_waiting = asyncio.Event()
    release = asyncio.Event()

    @output_guardrail
    async def slow_and_strict(agent: RealtimeAgent, text: str) -> bool:
        nonlocal entered
        entered += 1
        if entered == 3:
            three_waiting.set()
        await release.wait()
        return True

    agent = RealtimeAgent(name="a", output_guardrails=[slow_and_strict])
    server = ScriptedServer()

    async def body() -> None:
        async with RealtimeSession(
            agent, connector=server.connect, guardrail_debounce_chars=10
        ) as session:
            response_id = await server.text_response("0123456789" * 3, chunks=3, finish=False)
            await asyncio.wait_for(three_waiting.wait(), 5)
            assert session.background_tasks == 3
            release.set()
            events = await until(session, "guardrail_tripped")
            await server.wait_for("response.cancel")
            assert len(server.sent_of_type("response.cancel")) == 1
            assert len(server.sent_of_type("conversation.item.create")) == 1  # one feedback
            assert "response.create" not in server.sent_types()  # held: resp_1 still active
            await server.emit(
                {"type": "response.done", "response": {"id": response_id, "status": "cancelled"}}
            )
            await server.wait_for("response.create")
            await session.close()
            events += [e async for e in session]
            assert len(of_type(events, GuardrailTrippedEvent)) == 1
            assert len(server.sent_of_type("response.create")) == 1
            assert len(server.sent_of_type("response.cancel")) == 1

    run(body())


def test_a_guardrail_that_raises_or_cancels_itself_is_reported_and_skipped() -> None:
    @output_guardrail
    def broken(agent: RealtimeAgent, text: str) -> bool:
        raise ValueError("classifier unavailable")

    @output_guardrail
    async def self_cancelling(agent: RealtimeAgent, text: str) -> bool:
        raise asyncio.CancelledError

    seen: list[str] = []

    @output_guardrail
    def fine(agent: RealtimeAgent, text: str) -> bool:
        seen.append(text)
        return False

    agent = RealtimeAgent(name="a", output_guardrails=[broken, self_cancelling, fine])
    server = ScriptedServer()

    async def body() -> None:
        async with RealtimeSession(
            agent, connector=server.connect, guardrail_debounce_chars=None
        ) as session:
            await server.text_response("All good here.")
            errors: list[ErrorEvent] = []

            def second_error(event: object) -> bool:
                if isinstance(event, ErrorEvent):
                    errors.append(event)
                return len(errors) == 2

            events = await until(session, second_error)
            assert [e.source for e in errors] == ["guardrail", "guardrail"]
            assert any(isinstance(e.exception, ValueError) for e in errors)
            assert any("cancelled by its own code" in str(e.exception) for e in errors)
            assert seen == ["All good here."]  # once, at the end (no debounce)
            assert not of_type(events, GuardrailTrippedEvent)
            assert "response.cancel" not in server.sent_types()

    run(body())


def test_close_while_a_check_runs_leaves_no_task() -> None:
    started = asyncio.Event()

    @output_guardrail
    async def stuck(agent: RealtimeAgent, text: str) -> bool:
        started.set()
        await asyncio.sleep(30)
        return False

    agent = RealtimeAgent(name="a", output_guardrails=[stuck])
    server = ScriptedServer()

    async def body() -> None:
        session = RealtimeSession(agent, connector=server.connect, guardrail_debounce_chars=5)
        await session.connect()
        await server.text_response("long enough", chunks=1, finish=False)
        await asyncio.wait_for(started.wait(), 5)
        await session.close()
        assert session.background_tasks == 0
        assert_only_current_task()

    run(body())
