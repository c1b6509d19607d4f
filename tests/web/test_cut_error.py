"""The truncation error on the timeline: a ``cut_error`` record per cut item, from the session's
``InterruptionMetrics`` — and through a tab at 48 kHz, whose playback worklet reports what it
heard after every render quantum: the listener is within 128 frames of the clock."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.server.helpers import run
from tests.web.test_server import _record, tab_at_48k
from voxwire.asyncio.events import MetricsCollectedEvent
from voxwire.asyncio.observability.metrics import InterruptionMetrics, ResponseMetrics
from voxwire.web import Timeline


def test_a_cut_item_gets_a_cut_error_record() -> None:
    now = [10.0]
    timeline = Timeline(clock=lambda: now[0])
    cut = InterruptionMetrics(
        item_id="item_a",
        content_index=0,
        response_id="resp_a",
        played_ms=257,
        received_ms=900,
        dropped_ms=643,
        clock_heard_ms=257.1875,
        truncation_error_ms=-0.1875,
        clock_bound_ms=128 * 1000 / 48_000,
    )
    timeline.observe(MetricsCollectedEvent(metrics=cut))
    # Metrics of another kind, and a cut no clock counted, draw nothing.
    timeline.observe(
        MetricsCollectedEvent(metrics=ResponseMetrics(response_id="resp_a", status="completed"))
    )
    uncounted = InterruptionMetrics(
        item_id="item_b",
        content_index=0,
        response_id=None,
        played_ms=None,
        received_ms=0,
        dropped_ms=0,
    )
    timeline.observe(MetricsCollectedEvent(metrics=uncounted))
    assert timeline.records == [
        {
            "t": 0.0,
            "kind": "cut_error",
            "item_id": "item_a",
            "content_index": 0,
            "audio_end_ms": 257,
            "clock_ms": 257.188,
            "error_ms": -0.188,
            "bound_ms": 2.667,
        }
    ]


def test_a_tabs_cut_is_bounded_by_one_render_quantum() -> None:
    async def body() -> None:
        async with tab_at_48k() as (_, ws, chunks):
            await ws.send(json.dumps({"type": "text", "text": "tell me a story"}))
            await _record(ws, "audio_first", chunks)
            while sum(len(c) - 8 for c in chunks) // 2 < 48_000:
                message = await asyncio.wait_for(ws.recv(), 10)
                if isinstance(message, bytes):
                    chunks.append(message)
            heard = 12_345  # as if the page had played this far (48 kHz frames)
            await ws.send(json.dumps({"type": "played", "position": heard}))
            await ws.send(json.dumps({"type": "interrupt"}))
            error = await _record(ws, "cut_error", chunks)
            cut = await _record(ws, "cut", chunks)
        assert error["audio_end_ms"] == cut["audio_end_ms"]
        # The clock counts the item's 24 kHz samples, never past what the page reported; the
        # claim is its count floored to whole milliseconds.
        assert error["clock_ms"] <= heard * 1000 / 48_000
        assert error["error_ms"] == pytest.approx(cut["audio_end_ms"] - error["clock_ms"], abs=2e-3)
        assert -1 < error["error_ms"] <= 0
        assert error["bound_ms"] == pytest.approx(128 * 1000 / 48_000, abs=1e-3)

    run(body())
