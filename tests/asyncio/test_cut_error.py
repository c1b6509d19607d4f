"""The truncation error of a cut, end to end against the local server: what the session claims
the listener heard (``audio_end_ms``) against what the playback clock knew, with the clock's
bound (``InterruptionMetrics``).

The output is a :class:`~voxwire.audio.RemoteOutput` acknowledged per chunk, as the Twilio bridge
does with marks: the listener heard between the last acknowledged position and one chunk more.
The item is µ-law at 8 kHz, the output's rate: clock samples are item samples."""

from __future__ import annotations

import pytest

from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import AudioEndEvent, MetricsCollectedEvent, SessionEvent
from voxwire.asyncio.observability.metrics import InterruptionMetrics
from voxwire.audio import RemoteOutput

from .helpers import run, serving, settle, until

CHUNK = 320  # 40 ms at 8 kHz
PHONE = {
    "audio": {
        "input": {"turn_detection": None},
        "output": {"format": {"type": "audio/pcmu"}},
    }
}


def cut_metrics(event: SessionEvent) -> bool:
    return isinstance(event, MetricsCollectedEvent) and isinstance(
        event.metrics, InterruptionMetrics
    )


@pytest.mark.parametrize(
    ("acknowledged", "clock_ms", "bound_ms"),
    [
        (3 * CHUNK, 120.0, 40.0),  # the listener is in the fourth chunk, at most
        (3 * CHUNK + 7, 120.875, 40.0),  # a position inside a chunk: the claim is floored
        (10 * CHUNK, 400.0, 0.0),  # everything sent was acknowledged: nothing is uncertain
    ],
)
def test_the_cut_reports_its_error_against_the_clock_and_the_clocks_bound(
    acknowledged: int, clock_ms: float, bound_ms: float
) -> None:
    async def body() -> None:
        out = RemoteOutput(8000)
        async with (
            serving(tts="espeak") as server,
            RealtimeSession(url=server.url(), config=PHONE, audio_output=out) as session,
        ):
            await session.send_message("tell me a story")
            await settle(session)
            for _ in range(10):
                assert len(out.take(CHUNK)) == CHUNK
            out.acknowledge(acknowledged)
            await session.interrupt()
            events = await until(session, cut_metrics)
            metrics = events[-1]
            assert isinstance(metrics, MetricsCollectedEvent)
            cut = metrics.metrics
            assert isinstance(cut, InterruptionMetrics)
            assert cut.played_ms == int(clock_ms)
            assert cut.clock_heard_ms == pytest.approx(clock_ms)
            assert cut.truncation_error_ms == pytest.approx(int(clock_ms) - clock_ms)
            assert cut.clock_bound_ms == pytest.approx(bound_ms)

    run(body(), timeout_s=60)


def test_samples_the_application_counted_give_the_error_but_no_bound() -> None:
    """The application plays the audio itself and says what it played: that count is the
    clock; how far its listener may be past it, the session cannot know."""

    async def body() -> None:
        async with (
            serving(tts="espeak") as server,
            RealtimeSession(url=server.url(), config=PHONE) as session,
        ):
            await session.send_message("tell me a story")
            (end,) = [e for e in await settle(session) if isinstance(e, AudioEndEvent)]
            await session.interrupt({(end.item_id, 0): 4_003}, cancel_response=False)
            events = await until(session, cut_metrics)
            metrics = events[-1]
            assert isinstance(metrics, MetricsCollectedEvent)
            cut = metrics.metrics
            assert isinstance(cut, InterruptionMetrics)
            assert cut.played_ms == 500
            assert cut.clock_heard_ms == pytest.approx(500.375)
            assert cut.truncation_error_ms == pytest.approx(-0.375)
            assert cut.clock_bound_ms is None

    run(body(), timeout_s=60)
