"""More interruptions with an ``AudioOutput`` attached, end to end against the local server: an
output guardrail trip and two items queued in the speaker. Each truncation sent is what the
virtual speaker played of that item (floored to ms), items nothing of which was heard are
deleted, and the server accepts it all."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from voxwire.agents import GuardrailResult, RealtimeAgent, output_guardrail
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import (
    AudioEndEvent,
    AudioInterruptedEvent,
    ErrorEvent,
    GuardrailTrippedEvent,
    MetricsCollectedEvent,
    RawServerEvent,
    SessionEvent,
)
from voxwire.asyncio.observability.metrics import InterruptionMetrics
from voxwire.audio import MemoryOutput
from voxwire.protocol.server_events import ConversationItemDeleted, ConversationItemTruncated

from .helpers import AUDIO_MANUAL, RATE_HZ, SLOW, poll, run, serving, settle, until

PERIOD = 240  # 10 ms at 24 kHz


def speaker() -> MemoryOutput:
    return MemoryOutput(RATE_HZ, period_ms=10.0, latency_ms=0.0, prebuffer_ms=0.0)


def test_a_guardrail_trip_truncates_at_what_the_speaker_played() -> None:
    checks_may_finish = asyncio.Event()

    @output_guardrail(name="no_fairy_tales")
    async def no_fairy_tales(agent: RealtimeAgent, text: str) -> GuardrailResult:
        await checks_may_finish.wait()  # the test decides when the verdict lands
        return GuardrailResult(tripwire_triggered="upon" in text)

    agent = RealtimeAgent(name="teller", output_guardrails=[no_fairy_tales])

    async def body() -> None:
        out = speaker()
        async with (
            serving(tts="espeak", pacing=SLOW) as server,
            RealtimeSession(
                agent,
                url=server.url(),
                config=AUDIO_MANUAL,
                audio_output=out,
                raw_server_events=True,
                guardrail_debounce_chars=20,
            ) as session,
        ):
            await session.send_message("tell me a story")
            await poll(lambda: out.output.ring.readable_samples >= 40 * PERIOD)
            out.advance(37)  # 370 ms heard while the reply still streams
            checks_may_finish.set()
            events = await until(
                session,
                lambda e: (
                    isinstance(e, RawServerEvent) and isinstance(e.event, ConversationItemTruncated)
                ),
            )
            assert [e.guardrails for e in events if isinstance(e, GuardrailTrippedEvent)] == [
                ("no_fairy_tales",)
            ]
            (cut,) = [e for e in events if isinstance(e, AudioInterruptedEvent)]
            assert cut.played_ms == 370
            assert truncations(events) == [(cut.item_id, 370)]
            assert not [e for e in events if isinstance(e, ErrorEvent)]

    run(body(), timeout_s=60)


@asynccontextmanager
async def speaking_session(out: MemoryOutput) -> AsyncIterator[RealtimeSession]:
    async with (
        serving(tts="espeak") as server,
        RealtimeSession(
            url=server.url(), config=AUDIO_MANUAL, audio_output=out, raw_server_events=True
        ) as session,
    ):
        yield session


async def two_queued_replies(session: RealtimeSession) -> tuple[str, str]:
    """Two spoken replies, both queued in the speaker, none played: their item ids."""
    ends: list[AudioEndEvent] = []
    for _ in range(2):
        await session.send_message("hello")
        ends += [e for e in await settle(session) if isinstance(e, AudioEndEvent)]
    first, second = (e.item_id for e in ends)
    return first, second


def truncations(events: list[SessionEvent]) -> list[tuple[str, int]]:
    return [
        (e.event.item_id, e.event.audio_end_ms)
        for e in events
        if isinstance(e, RawServerEvent) and isinstance(e.event, ConversationItemTruncated)
    ]


def test_two_queued_items_the_first_truncated_the_second_deleted() -> None:
    async def body() -> None:
        out = speaker()
        async with speaking_session(out) as session:
            first, second = await two_queued_replies(session)
            out.advance(30)  # 300 ms of the first reply heard
            await session.interrupt()
            events = await until(
                session,
                lambda e: (
                    isinstance(e, RawServerEvent) and isinstance(e.event, ConversationItemDeleted)
                ),
            )
            cuts = [
                (e.item_id, e.played_ms) for e in events if isinstance(e, AudioInterruptedEvent)
            ]
            assert cuts == [(first, 300), (second, None)]
            raw = [e.event for e in events if isinstance(e, RawServerEvent)]
            assert truncations(events) == [(first, 300)]
            assert [d.item_id for d in raw if isinstance(d, ConversationItemDeleted)] == [second]
            assert not [e for e in events if isinstance(e, ErrorEvent)]
            dropped = [
                e.metrics
                for e in events
                if isinstance(e, MetricsCollectedEvent)
                and isinstance(e.metrics, InterruptionMetrics)
            ]
            assert [(m.item_id, m.played_ms) for m in dropped] == [(first, 300), (second, None)]
            assert dropped[1].dropped_ms == dropped[1].received_ms > 0

    run(body())


def test_two_queued_items_the_first_heard_whole_the_second_truncated() -> None:
    async def body() -> None:
        out = speaker()
        async with speaking_session(out) as session:
            first, second = await two_queued_replies(session)
            first_samples = session.protocol.audio_received_samples(first)
            periods = first_samples // PERIOD + 25  # the whole first reply, then ~250 ms more
            out.advance(periods)
            heard_ms = (periods * PERIOD - first_samples) * 1000 // RATE_HZ
            await session.interrupt()
            events = await until(
                session,
                lambda e: (
                    isinstance(e, RawServerEvent) and isinstance(e.event, ConversationItemTruncated)
                ),
            )
            cuts = [
                (e.item_id, e.played_ms) for e in events if isinstance(e, AudioInterruptedEvent)
            ]
            assert cuts == [(second, heard_ms)]
            assert truncations(events) == [(second, heard_ms)]
            assert not [e for e in events if isinstance(e, ErrorEvent)]
            history = {item.item_id for item in session.history}
            assert {first, second} <= history

    run(body())
