"""Usage and cost: the price arithmetic, then a session against the local server (its usage in
``response.done`` as the service reports it, cached tokens included)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from tests.live.samples import SERVER, SESSION
from voxwire.agents import RealtimeAgent
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import RawServerEvent, UsageUpdatedEvent
from voxwire.asyncio.live import LiveSession, LiveUsageEvent
from voxwire.asyncio.observability.metrics import TokenUsage
from voxwire.asyncio.observability.pricing import (
    PUBLISHED_PRICES,
    DurationPrices,
    TokenPrices,
    duration_cost_usd,
    price_table,
    prices_for,
    token_cost_usd,
)
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import server_events as se
from voxwire.store import SQLiteStore

from .helpers import AUDIO_MANUAL, run, serving, speech_pcm, until

#: Round prices, so the expected figures can be worked out by hand.
ROUND = TokenPrices(
    text_input=1.0,
    text_cached_input=0.1,
    text_output=2.0,
    audio_input=10.0,
    audio_cached_input=0.5,
    audio_output=20.0,
    image_input=3.0,
    image_cached_input=0.3,
)


def test_cached_input_is_priced_at_the_cached_rate_and_not_twice() -> None:
    usage = TokenUsage(
        input_tokens=1_300,
        output_tokens=300,
        input_text_tokens=1_000,
        input_audio_tokens=200,
        input_image_tokens=100,
        input_cached_tokens=700,
        input_cached_text_tokens=600,
        input_cached_audio_tokens=100,
        output_text_tokens=100,
        output_audio_tokens=200,
    )
    # text: 400 * 1 + 600 * 0.1; audio: 100 * 10 + 100 * 0.5; image: 100 * 3;
    # output: 100 * 2 + 200 * 20 — per million tokens.
    expected = (400 + 60 + 1_000 + 50 + 300 + 200 + 4_000) / 1_000_000
    assert token_cost_usd(usage, ROUND) == pytest.approx(expected)


def test_cached_tokens_without_a_split_count_as_text() -> None:
    usage = TokenUsage(input_text_tokens=1_000, input_cached_tokens=1_000)
    assert token_cost_usd(usage, ROUND) == pytest.approx(1_000 * 0.1 / 1_000_000)


def test_live_time_is_priced_per_second_at_its_rates() -> None:
    prices = DurationPrices(active_per_minute=0.05, standby_per_minute=0.02)
    assert duration_cost_usd(90, prices) == pytest.approx(0.075)
    assert duration_cost_usd(90, prices, active_seconds=60, standby_seconds=30) == pytest.approx(
        0.05 + 0.01
    )


def test_the_published_table_names_its_source_and_date_and_takes_overrides() -> None:
    for model, prices in PUBLISHED_PRICES.items():
        assert prices.source.startswith("https://developers.openai.com/"), model
        assert prices.as_of == "2026-11-27", model
    assert (
        prices_for("gpt-realtime-2-2026-09-01", PUBLISHED_PRICES)
        is PUBLISHED_PRICES["gpt-realtime-2"]
    )
    assert prices_for("no-such-model", PUBLISHED_PRICES) is None  # no guess
    assert price_table({"gpt-realtime-2": ROUND})["gpt-realtime-2"] is ROUND


def test_a_price_table_of_the_wrong_shape_fails_at_construction() -> None:
    with pytest.raises(ConfigurationError, match="prices"):
        RealtimeSession(prices={"gpt-realtime": 4.0})  # type: ignore[dict-item]


def test_usage_per_response_and_session_matches_the_servers_response_done() -> None:
    async def body() -> None:
        pcm = speech_pcm()
        async with (
            serving(tts="espeak") as server,
            RealtimeSession(
                url=server.url(model="my-model"),
                config=AUDIO_MANUAL,
                raw_server_events=True,
                prices={"my-model": ROUND},
            ) as session,
        ):
            reported: list[TokenUsage] = []
            updates: list[UsageUpdatedEvent] = []
            for _turn in range(2):
                await session.send_audio(pcm, commit=True)
                await session.create_response()
                events = await until(session, "usage_updated")
                updates += [e for e in events if isinstance(e, UsageUpdatedEvent)]
                reported += [
                    TokenUsage.from_usage(e.event.response.usage)
                    for e in events
                    if isinstance(e, RawServerEvent) and isinstance(e.event, se.ResponseDone)
                ]
            assert len(reported) == len(updates) == 2
            first, second = reported
            # The second response's input begins with the first's: the server says it was
            # cached, as the service does (a part of the input tokens, split by modality).
            assert first.input_cached_tokens == 0
            assert second.input_cached_audio_tokens > 0
            assert second.input_cached_tokens == (
                second.input_cached_text_tokens + second.input_cached_audio_tokens
            )
            assert second.input_cached_tokens <= second.input_tokens
            totals = session.metrics
            assert totals.usage == first + second
            assert updates[-1].totals.usage == totals.usage
            for update, usage in zip(updates, reported, strict=True):
                assert update.response.usage == usage
                assert update.response.estimated_cost_usd == pytest.approx(
                    token_cost_usd(usage, ROUND)
                )
                assert update.response.output_audio_s > 0
            assert totals.estimated_cost_usd == pytest.approx(token_cost_usd(totals.usage, ROUND))
            assert totals.input_audio_s == pytest.approx(2 * len(pcm) / 48_000)
            assert totals.output_audio_s == pytest.approx(
                sum(u.response.output_audio_s for u in updates)
            )

    run(body())


def test_a_model_without_a_price_has_no_estimate() -> None:
    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(url=server.url(model="unpriced"), config=AUDIO_MANUAL) as session,
        ):
            await session.send_message("hello")
            events = await until(session, "usage_updated")
            (update,) = [e for e in events if isinstance(e, UsageUpdatedEvent)]
            assert update.response.usage.total_tokens > 0
            assert update.response.estimated_cost_usd is None
            assert session.metrics.estimated_cost_usd is None

    run(body())


@asynccontextmanager
async def live_peer(*frames: dict[str, Any]) -> AsyncIterator[str]:
    """A Live server that starts the session, sends ``frames``, then reads until closed."""

    async def peer(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(json.dumps({**SERVER["session.started"], "session": SESSION}))
        for frame in frames:
            await ws.send(json.dumps(frame))
        async for _ in ws:
            pass

    async with serve(peer, "127.0.0.1", 0) as server:
        yield f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/live/sessions"


async def live_events(url: str, **options: Any) -> tuple[list[Any], LiveSession]:
    session = LiveSession(RealtimeAgent(name="Priced"), url=url, **options)
    await session.connect()
    events = [event async for event in session]
    await session.close()
    return events, session


def test_a_live_sessions_time_is_priced_as_the_server_reports_it() -> None:
    usage = {"seconds": 90.0, "active_seconds": 60, "paused_seconds": 30}
    frames = (
        {**SERVER["session.usage.updated"], "usage": usage},
        {**SERVER["session.closed"], "usage": {"seconds": 120.0}},
    )

    async def body() -> None:
        async with live_peer(*frames) as url:
            events, session = await live_events(url, model="gpt-live-1.1")
            (update,) = [e for e in events if isinstance(e, LiveUsageEvent)]
            assert (update.active_seconds, update.standby_seconds) == (60, 30)
            assert update.estimated_cost_usd == pytest.approx(60 * 0.05 / 60 + 30 * 0.02 / 60)
            # The final usage (no split: all active) is what the metrics keep.
            assert session.metrics.estimated_cost_usd == pytest.approx(120 * 0.05 / 60)

    run(body())


def test_a_live_price_given_by_the_application_is_used() -> None:
    prices = {"gpt-live-1": DurationPrices(active_per_minute=0.1, standby_per_minute=0.0)}

    async def body() -> None:
        async with live_peer(SERVER["session.closed"]) as url:  # 9 s: 8 active, 1 paused
            _, session = await live_events(url, prices=prices)
            assert session.metrics.estimated_cost_usd == pytest.approx(8 * 0.1 / 60)

    run(body())


def test_a_live_conversations_billed_time_is_in_its_stored_usage(tmp_path: Path) -> None:
    frames = (
        {**SERVER["session.usage.updated"], "usage": {"seconds": 90.0}},
        {**SERVER["session.closed"], "usage": {"seconds": 120.0}},
    )

    async def body() -> float:
        store = await SQLiteStore.open(tmp_path / "c.db")
        try:
            async with live_peer(*frames) as url:
                await live_events(url, store=store, conversation_id="live-1")
            return (await store.load("live-1")).usage.live_seconds
        finally:
            await store.close()

    assert run(body()) == 120.0
