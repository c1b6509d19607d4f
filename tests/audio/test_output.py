"""AudioOutput through a virtual speaker: exact heard accounting, prebuffer, underruns, fade,
device-rate resampling, G.711, first-sample timings. Real Rust ring, clock and resampler."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from tests.audio.signals import fit_sine, sine, to_int16, until
from voxwire.audio import AudioOutput, MemoryOutput, g711
from voxwire.exceptions import ConfigurationError


def const(value: int, ms: int, rate_hz: int = 24_000) -> npt.NDArray[np.int16]:
    return np.full(rate_hz * ms // 1000, value, dtype=np.int16)


def push_in_deltas(
    output: AudioOutput, item: str, pcm: npt.NDArray[np.int16], delta_ms: int = 20
) -> None:
    step = 24 * delta_ms
    for start in range(0, len(pcm), step):
        assert output.push(item, 0, pcm[start : start + step].tobytes()) == 0


def test_interrupt_reports_exactly_what_the_speaker_had_played_of_each_item() -> None:
    speaker = MemoryOutput(24_000, period_ms=10, latency_ms=30, prebuffer_ms=40)
    out = speaker.output
    push_in_deltas(out, "a", const(1000, 500))
    out.end("a", 0)
    push_in_deltas(out, "b", const(-2000, 500))
    speaker.advance(60)  # 600 ms: a (500 ms) heard in full after the 30 ms device buffer, b partly
    heard = speaker.played()
    reports = out.interrupt()
    # "a" finished before "b" started: nothing of it was cut, so it is not reported.
    assert [(r.item_id, r.started) for r in reports] == [("b", True)]
    b_heard = int(np.count_nonzero(heard == -2000))
    assert (
        b_heard == 600 * 24 - 30 * 24 - 500 * 24
    )  # the first 30 ms of the stream are device silence
    assert reports[0].played_samples == b_heard
    assert reports[0].played_ms == b_heard * 1000 // 24_000
    assert int(np.count_nonzero(heard == 1000)) == 500 * 24


def test_interrupt_mid_item_counts_prebuffer_and_latency_exactly() -> None:
    speaker = MemoryOutput(24_000, period_ms=20, latency_ms=50, prebuffer_ms=60)
    out = speaker.output
    speaker.advance(3)  # idle before the reply: silence, not underrun
    push_in_deltas(out, "a", const(700, 20))
    speaker.advance(1)  # 20 ms queued < 60 ms prebuffer: still silent
    push_in_deltas(out, "a", const(700, 180))
    speaker.advance(7)  # starts at 80 ms (200 ms queued >= prebuffer); heard up to 220 - 50 ms
    heard = speaker.played()
    played = out.clock.played("a", 0)
    assert played is not None
    assert played.played_samples == np.count_nonzero(heard == 700)
    (report,) = out.interrupt()
    assert report.played_samples == np.count_nonzero(heard == 700) == 24 * (220 - 50 - 80)
    assert report.queued_samples == 200 * 24
    assert out.underruns == 0


def test_unheard_samples_include_the_device_buffer_until_it_played_out() -> None:
    speaker = MemoryOutput(24_000, period_ms=10, latency_ms=30, prebuffer_ms=0)
    out = speaker.output
    assert out.unheard_samples == 0
    push_in_deltas(out, "a", const(500, 100))
    out.end("a", 0)
    assert out.unheard_samples == 100 * 24
    speaker.advance(10)  # all 100 ms handed over; 70 ms heard, 30 ms in the device buffer
    assert out.ring.readable_samples == 0
    assert out.unheard_samples == 30 * 24
    speaker.advance(2)
    assert out.unheard_samples == 10 * 24
    speaker.advance(1)
    assert out.unheard_samples == 0
    push_in_deltas(out, "b", const(500, 100))
    speaker.advance(5)  # 50 ms handed, 20 ms heard
    out.interrupt()  # the 50 ms not handed over are dropped; the device buffer still plays
    assert out.unheard_samples == 30 * 24
    speaker.advance(3)
    assert out.unheard_samples == 0


def test_fade_after_interrupt_has_no_click_and_the_device_buffer_plays_out() -> None:
    speaker = MemoryOutput(24_000, period_ms=10, latency_ms=20, prebuffer_ms=0, fade_ms=4)
    out = speaker.output
    tone = to_int16(sine(440, 24_000, 24_000, 12_000))
    push_in_deltas(out, "a", tone)
    speaker.advance(30)
    (report,) = out.interrupt()
    speaker.advance(10)
    played = speaker.played()
    # What was handed before the interrupt still plays out of the device buffer (20 ms more
    # than the truncation point), then the fade, then silence.
    start = 20 * 24  # device buffer silence before the first sample
    cut = start + report.played_samples + 20 * 24
    assert np.array_equal(played[start:cut], tone[: report.played_samples + 20 * 24])
    max_step_in_tone = int(np.max(np.abs(np.diff(tone.astype(np.int32)))))
    steps = np.abs(np.diff(played[cut - 1 : cut + 200].astype(np.int32)))
    assert int(steps.max()) <= max(max_step_in_tone, abs(int(played[cut - 1])) // 96 + 1)
    assert np.all(played[cut + 96 :] == 0)
    assert abs(int(played[cut - 1])) > 1000  # the cut landed mid-wave: without the fade, a click


def test_underruns_are_counted_with_the_silence_inserted_and_the_end_is_not_one() -> None:
    speaker = MemoryOutput(24_000, period_ms=10, prebuffer_ms=40, fade_ms=0)
    out = speaker.output
    push_in_deltas(out, "a", const(500, 60))
    speaker.advance(10)  # 60 ms play, then 40 ms starved
    assert out.underruns == 1
    assert out.underrun_samples == 40 * 24
    push_in_deltas(out, "a", const(500, 20))
    speaker.advance(2)  # 20 ms < prebuffer: still waiting (starved)
    push_in_deltas(out, "a", const(500, 20))
    speaker.advance(4)  # 40 ms queued: resumes
    assert out.underruns == 1
    assert out.underrun_samples == 60 * 24
    played = speaker.played()
    assert np.count_nonzero(played == 0) == out.underrun_samples
    out.end("a", 0)
    speaker.advance(5)
    assert out.underruns == 1  # the part ended: running dry is the end, not an underrun
    assert np.count_nonzero(speaker.played() == 500) == 100 * 24


def test_a_cut_while_starved_stops_the_underrun_count() -> None:
    # issue 30: the cut arrived while the output was starved; every idle pull after it was
    # counted as underrun until the next reply played (1,010 ms here instead of 10 ms).
    out = AudioOutput(24_000)
    out.push("item_1", 0, bytes(4_800))  # 100 ms
    for _ in range(11):  # 110 ms of pulls: the ring runs dry in the eleventh
        out.pull(240)
    assert (out.underruns, out.underrun_samples) == (1, 240)
    out.push("item_1", 0, bytes(4_800))  # more arrives (below the prebuffer's wait) ...
    out.interrupt()  # ... and the user cuts
    for _ in range(100):
        out.pull(240)
    assert (out.underruns, out.underrun_samples) == (1, 240)
    # The next reply's own underruns still count.
    out.push("item_2", 0, bytes(4_800))
    for _ in range(11):
        out.pull(240)
    assert (out.underruns, out.underrun_samples) == (2, 480)


def test_prebuffer_waits_at_most_its_own_length_and_a_finished_part_plays_at_once() -> None:
    speaker = MemoryOutput(24_000, period_ms=10, prebuffer_ms=50)
    out = speaker.output
    push_in_deltas(out, "a", const(300, 10))
    speaker.advance(7)
    out.end("a", 0)
    first = int(np.flatnonzero(speaker.played())[0])
    assert first == 50 * 24  # waited the prebuffer's length for more audio, then played
    push_in_deltas(out, "b", const(300, 10))
    out.end("b", 0)
    before = speaker.played_samples
    speaker.advance(1)
    assert np.all(speaker.played()[before:] == 300)  # no prebuffer wait for a finished part


@pytest.mark.parametrize("device_rate_hz", [48_000, 44_100])
def test_device_rate_resampling_counts_the_sound_rendered_not_the_warm_up(
    device_rate_hz: int,
) -> None:
    # issue 30: the part's resampler starts with its delay of warm-up before the sound (a click
    # at the item's first sample is rendered 82 / 76 device samples in, 1.7 ms); counting it as
    # heard put every cut 1.7 ms (41 item samples) ahead of what was rendered.
    speaker = MemoryOutput(device_rate_hz, period_ms=10, latency_ms=20, prebuffer_ms=0)
    out = speaker.output
    item = np.zeros(24_000, dtype=np.int16)
    item[0] = 20_000  # a click on the first sample shows where the sound starts
    item[240:] = to_int16(sine(440, 24_000, 24_000 - 240, 10_000))
    push_in_deltas(out, "a", item)
    out.end("a", 0)
    period = speaker.period_samples
    latency = out.output_latency_samples
    speaker.advance(37)
    played = speaker.played()
    assert np.all(played[:latency] == 0)
    sound_starts = int(np.argmax(played[latency : latency + 200]))  # in ring samples
    assert sound_starts == {48_000: 82, 44_100: 76}[device_rate_hz]
    heard_ring = 37 * period - latency
    (report,) = out.interrupt()
    assert report.rate_hz == 24_000
    rendered = (heard_ring - sound_starts) * 24_000 // device_rate_hz  # item samples of sound
    assert rendered - 1 <= report.played_samples <= rendered  # never ahead, within one sample
    assert report.played_ms == report.played_samples * 1000 // 24_000
    assert report.queued_samples == 24_000  # the warm-up is not the item's audio either
    amplitude, _, resid = fit_sine(played[latency + 1_000 :], 440, device_rate_hz, 400)
    assert abs(amplitude - 10_000) < 20
    assert np.sqrt(np.mean(resid**2)) < 10


def test_g711_items_are_reported_at_8_khz() -> None:
    speaker = MemoryOutput(24_000, period_ms=20, prebuffer_ms=0)
    out = speaker.output
    codes = g711.ulaw_encode(to_int16(sine(300, 8_000, 8_000, 8_000)))
    for start in range(0, len(codes), 160):
        out.push("g", 0, codes[start : start + 160], format="audio/pcmu")
    speaker.advance(13)
    (report,) = out.interrupt()
    assert report.rate_hz == 8_000
    # The 8 -> 24 kHz resampler's first 124 ring samples (5.2 ms) are its warm-up, not heard.
    assert report.played_samples == (13 * 480 - 124) // 3
    assert report.played_ms == 254


def test_interrupt_before_the_first_sample_reports_both_items_unstarted() -> None:
    speaker = MemoryOutput(24_000, period_ms=10, latency_ms=40, prebuffer_ms=0)
    out = speaker.output
    push_in_deltas(out, "a", const(100, 40))
    push_in_deltas(out, "b", const(200, 40))
    speaker.advance(3)  # 30 ms handed over, none of it heard yet (40 ms device latency)
    reports = out.interrupt()
    assert [(r.item_id, r.started, r.played_samples) for r in reports] == [
        ("a", False, 0),
        ("b", False, 0),
    ]


def test_first_sample_time_is_when_the_speaker_played_it() -> None:
    speaker = MemoryOutput(24_000, period_ms=10, latency_ms=30, prebuffer_ms=40)
    out = speaker.output
    speaker.advance(10)
    push_in_deltas(out, "a", const(900, 20))
    speaker.advance(2)
    push_in_deltas(out, "a", const(900, 40))
    speaker.advance(10)
    timing = out.timing("a", 0)
    assert timing is not None
    assert timing.first_sample_at is not None
    first_heard = int(np.flatnonzero(speaker.played() == 900)[0]) / 24_000
    assert timing.first_delta_at == pytest.approx(0.100)
    assert timing.first_sample_at == pytest.approx(first_heard)
    assert timing.first_sample_delay_ms == pytest.approx(50.0)  # 20 ms waiting + 30 ms latency


def test_first_sample_time_at_48_khz_is_when_the_sound_is_heard_not_the_warm_up() -> None:
    speaker = MemoryOutput(48_000, period_ms=10, latency_ms=30, prebuffer_ms=0)
    out = speaker.output
    item = np.zeros(4_800, dtype=np.int16)
    item[0] = 20_000  # the click on the item's first sample, rendered after the warm-up
    push_in_deltas(out, "a", item)
    out.end("a", 0)
    speaker.advance(10)
    timing = out.timing("a", 0)
    assert timing is not None
    assert timing.first_sample_at is not None
    assert timing.sound_start == 82.0
    click_heard = int(np.argmax(speaker.played())) / 48_000
    assert click_heard == pytest.approx((82 + 30 * 48) / 48_000)
    assert timing.first_sample_at == pytest.approx(click_heard)


def test_a_full_ring_refuses_and_counts() -> None:
    out = AudioOutput(24_000, capacity_ms=100)
    refused = out.push("a", 0, const(1, 150).tobytes())
    assert refused == 50 * 24
    assert out.sink.dropped_samples == refused


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"device_rate_hz": 0}, "device_rate_hz=0 is invalid"),
        ({"device_rate_hz": 24_000.0}, "device_rate_hz=24000.0 is invalid"),
        ({"prebuffer_ms": -1}, "prebuffer_ms=-1 is invalid"),
        ({"fade_ms": 500}, "fade_ms=500 is invalid"),
        ({"capacity_ms": 0}, "capacity_ms=0 is invalid"),
        ({"output_latency_ms": -5}, "output_latency_ms=-5 is invalid"),
    ],
)
def test_bad_output_parameters_fail_at_construction(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        AudioOutput(**kwargs)  # type: ignore[arg-type]


def test_bad_speaker_parameters_and_formats() -> None:
    with pytest.raises(ConfigurationError, match="period_ms=0 is invalid"):
        MemoryOutput(period_ms=0)
    with pytest.raises(ConfigurationError, match="audio/opus' is not a Realtime audio format"):
        AudioOutput().push("a", 0, b"\0\0", format="audio/opus")
    with pytest.raises(ConfigurationError, match="n_periods=-1 is invalid"):
        MemoryOutput().advance(-1)


def test_interrupt_from_another_thread_while_the_speaker_runs_in_real_time() -> None:
    speaker = MemoryOutput(24_000, period_ms=10, latency_ms=20, prebuffer_ms=20)
    out = speaker.output
    push_in_deltas(out, "a", const(1234, 2000))
    speaker.start()
    try:
        # Once the item plays (waiting for it, not for a time that may not be enough on a
        # loaded machine), then until the device buffer and the period in flight played out.
        until(lambda: speaker.played_samples >= 250 * 24)
        (report,) = out.interrupt()  # this thread is the producer; the speaker thread pulls
        at_interrupt = speaker.played_samples
        until(lambda: speaker.played_samples >= at_interrupt + 100 * 24)
    finally:
        speaker.stop()
    heard_in_total = int(np.count_nonzero(speaker.played() == 1234))
    assert report.started
    # What had been heard at the interrupt, plus at most the device buffer and the period in
    # flight, which still play out; never less than reported.
    assert report.played_samples <= heard_in_total <= report.played_samples + (20 + 10) * 24


def test_timings_of_parts_that_are_over_are_kept_for_the_most_recent() -> None:
    from voxwire.audio.output import TIMINGS_KEPT

    out = AudioOutput(24_000, prebuffer_ms=0)
    period = np.zeros(480, dtype=np.int16)
    parts = 4 * TIMINGS_KEPT
    for n in range(parts):
        out.push(f"i{n}", 0, const(7, 10).tobytes())
        out.end(f"i{n}", 0)
        out.pull_into(period)  # heard: its first sample's time is known
    out.push("open", 0, const(7, 10).tobytes())  # still streaming, never heard yet
    for n in range(parts):
        out.push(f"j{n}", 0, const(7, 10).tobytes())
        out.end(f"j{n}", 0)
    kept = [n for n in range(parts) if out.timing(f"i{n}", 0) is not None]
    assert kept == list(range(parts - len(kept), parts))  # the most recent ones
    assert len(kept) < 2 * TIMINGS_KEPT
    assert out.timing("open", 0) is not None  # open and waiting: kept
    assert all(out.timing(f"j{n}", 0) is not None for n in range(parts))  # waiting to be heard
    last = out.timing(f"i{parts - 1}", 0)
    assert last is not None
    assert last.first_sample_at is not None
