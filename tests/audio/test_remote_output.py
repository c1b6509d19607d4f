"""RemoteOutput: an AudioOutput whose listener is remote. Chunks go out with take(), the heard
position moves only with acknowledge(), and an interruption reports each item at the last
acknowledged position — through the real Rust ring and playback clock."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voxwire.audio import AudioOutput, RemoteOutput, g711
from voxwire.exceptions import ConfigurationError


def ulaw(n: int, value: int = 1000) -> bytes:
    return g711.ulaw_encode(np.full(n, value, dtype=np.int16))


def test_it_is_an_audio_output_whose_clock_moves_only_with_acknowledgements() -> None:
    woken: list[str] = []
    out = RemoteOutput(8000, on_audio=lambda: woken.append("audio"))
    assert isinstance(out, AudioOutput)
    out.push("item_a", 0, ulaw(800), "audio/pcmu", 8000)
    assert woken == ["audio"]
    assert out.unheard_samples == 800
    chunk = out.take(320)
    assert len(chunk) == 320
    assert out.sent_samples == 320
    assert out.unheard_samples == 800  # sent is not heard
    played = out.clock.played("item_a", 0)
    assert played is not None
    assert played.played_samples == 0
    assert not played.started
    out.acknowledge(320)
    played = out.clock.played("item_a", 0)
    assert played is not None
    assert played.played_samples == 320
    assert out.unheard_samples == 480


def test_a_part_still_streaming_goes_out_in_whole_chunks_and_its_tail_once_it_ended() -> None:
    out = RemoteOutput(8000)
    out.push("a", 0, ulaw(500), "audio/pcmu", 8000)
    assert len(out.take(320)) == 320
    assert len(out.take(320)) == 0  # 180 left, the part goes on: wait for a whole chunk
    out.end("a", 0)
    assert len(out.take(320)) == 180
    assert out.sent_samples == 500
    out.push("b", 0, ulaw(100), "audio/pcmu", 8000)
    assert len(out.take(320)) == 0
    assert len(out.take(320, partial=True)) == 100  # the sender waited long enough for more


def test_an_interruption_reports_what_was_acknowledged_and_forgets_what_was_sent() -> None:
    cleared: list[int] = []
    out = RemoteOutput(8000)
    out.on_interrupt = lambda: cleared.append(out.sent_samples)
    out.push("a", 0, ulaw(1600), "audio/pcmu", 8000)
    for _ in range(4):
        out.take(320)  # 1280 sent
    out.acknowledge(640)  # 80 ms played at the far end
    (report,) = out.interrupt()
    assert (report.item_id, report.played_samples, report.played_ms) == ("a", 640, 80)
    assert cleared == [1600]  # the ring's unsent 320 were dropped too
    assert out.unheard_samples == 0
    out.acknowledge(1280)  # a late acknowledgement of dropped audio changes nothing
    out.push("b", 0, ulaw(320), "audio/pcmu", 8000)
    out.end("b", 0)
    assert len(out.take(320)) == 320
    played = out.clock.played("b", 0)
    assert played is not None
    assert played.played_samples == 0
    out.acknowledge(out.sent_samples)
    played = out.clock.played("b", 0)
    assert played is not None
    assert played.played_samples == 320


def test_pcm_at_another_rate_is_resampled_to_the_remote_rate() -> None:
    out = RemoteOutput(16000)
    out.push("a", 0, np.zeros(2400, np.int16).tobytes(), "audio/pcm", 24000)
    out.end("a", 0)
    sent = len(out.take(10_000))
    assert 1600 <= sent <= 1700  # 100 ms at 16 kHz, and the resampler's flushed delay


def test_misuse_says_what_to_do() -> None:
    out = RemoteOutput(8000)
    with pytest.raises(ConfigurationError, match="positive"):
        out.take(0)
    with pytest.raises(TypeError, match="acknowledge"):
        out.pull(160)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["push", "take", "ack", "cut"]), st.integers(1, 900)),
        max_size=40,
    )
)
def test_truncation_never_exceeds_what_was_acknowledged(steps: list[tuple[str, int]]) -> None:
    """Whatever the order of pushes, sends, acknowledgements and cuts, every item is reported
    played exactly as far as the acknowledged position reaches into it."""
    out = RemoteOutput(8000)
    item, starts, sent_marks = 0, {"i0": 0}, [0]
    for action, n in steps:
        if action == "push":
            if n % 3 == 0:
                item += 1
                starts[f"i{item}"] = out.ring.pushed_samples
            out.push(f"i{item}", 0, ulaw(n), "audio/pcmu", 8000)
        elif action == "take" and len(out.take(n)):
            sent_marks.append(out.sent_samples)
        elif action == "ack":
            out.acknowledge(sent_marks[n % len(sent_marks)])
        elif action == "cut":
            heard = out.heard_samples
            for report in out.interrupt():
                start = starts[report.item_id]
                assert report.played_samples == max(0, min(heard - start, report.queued_samples))
            sent_marks = [out.sent_samples]
            item += 1
            starts[f"i{item}"] = out.ring.pushed_samples


def test_the_listener_is_within_one_chunk_of_the_last_acknowledgement() -> None:
    """Acknowledged per chunk (Twilio's marks): the listener may be past the clock by the audio
    sent and not acknowledged, at most the largest chunk taken."""
    out = RemoteOutput(8000)
    assert out.heard_bound_samples == 0  # nothing sent
    out.push("a", 0, ulaw(2000), "audio/pcmu", 8000)
    out.take(320)
    assert out.heard_bound_samples == 320
    for _ in range(3):
        out.take(320)
    assert out.heard_bound_samples == 320  # 1280 sent, none acknowledged: one chunk at most
    out.acknowledge(1200)
    assert out.heard_bound_samples == 80  # only 80 sent past the acknowledgement
    out.acknowledge(1280)
    assert out.heard_bound_samples == 0  # everything sent was heard


def test_a_page_acknowledging_every_render_quantum_bounds_the_clock_by_one() -> None:
    out = RemoteOutput(48_000, ack_every_samples=128)
    out.push("a", 0, bytes(48_000), "audio/pcm", 24_000)
    out.take(1920)
    assert out.heard_bound_samples == 128
    out.acknowledge(1900)
    assert out.heard_bound_samples == 20


@pytest.mark.parametrize("bad", [0, -128, 1.5, True, "128"])
def test_ack_every_samples_must_be_a_positive_count(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="ack_every_samples"):
        RemoteOutput(8000, ack_every_samples=bad)  # type: ignore[arg-type]
