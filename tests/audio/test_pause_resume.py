"""AudioOutput.pause / resume / cut at the pause point, through the real Rust ring and clock,
and the false-interruption decisions that drive them."""

from __future__ import annotations

import numpy as np
import pytest

from voxwire.audio import AudioOutput, Decision, FalseInterruptionFilter, MemoryOutput
from voxwire.exceptions import ConfigurationError

RATE_HZ = 24_000


def ramp(n: int) -> np.ndarray:
    """Distinct sample values, so positions in what was played can be read back."""
    return (np.arange(n) % 30_000 + 1).astype(np.int16)


def speaker_with(audio: np.ndarray, **options: float) -> MemoryOutput:
    speaker = MemoryOutput(RATE_HZ, period_ms=10.0, prebuffer_ms=0.0, fade_ms=4.0, **options)
    speaker.output.push("item_a", 0, audio.tobytes())
    speaker.output.end("item_a", 0)
    return speaker


def test_resume_continues_at_the_exact_paused_sample_without_a_click() -> None:
    audio = ramp(24_000)
    speaker = speaker_with(audio)
    speaker.advance(10)  # 100 ms played: samples 0..2400
    speaker.output.pause()
    assert speaker.output.paused
    faded = speaker.advance(1)
    fade = 96  # 4 ms at 24 kHz
    # The fade starts at the pause point and goes to zero; then silence.
    expected = np.rint(audio[2400 : 2400 + fade] * (1 - np.arange(1, fade + 1) / fade))
    assert np.array_equal(faded[:fade], expected.astype(np.int16))
    assert not faded[fade:].any()
    assert not speaker.advance(5).any()  # paused: silence, nothing consumed
    assert speaker.output.pause_point == 2400
    speaker.output.resume()
    resumed = speaker.advance(1)
    ramp_in = np.rint(audio[2400 : 2400 + fade] * (np.arange(1, fade + 1) / fade))
    assert np.array_equal(resumed[:fade], ramp_in.astype(np.int16))
    assert np.array_equal(resumed[fade:], audio[2400 + fade : 2400 + 240])
    # Everything after plays unchanged, to the end: nothing was lost or repeated.
    rest = speaker.advance(100)
    assert np.array_equal(rest[: 24_000 - 2640], audio[2640:])
    played = speaker.output.clock.played("item_a", 0)
    assert played is not None
    assert played.played_samples == 24_000


def test_cut_while_paused_truncates_at_the_pause_point() -> None:
    speaker = speaker_with(ramp(24_000), latency_ms=30.0)
    speaker.advance(25)  # 250 ms handed over; 220 ms heard
    speaker.output.pause()
    speaker.advance(30)  # the decision takes 300 ms; the device buffer plays out meanwhile
    reports = speaker.output.interrupt()
    assert [(r.item_id, r.played_samples) for r in reports] == [("item_a", 6000)]
    assert not speaker.output.paused
    assert not speaker.advance(10).any()  # cut: nothing more plays
    # A new reply plays normally after the cut.
    speaker.output.push("item_b", 0, ramp(480).tobytes())
    speaker.output.end("item_b", 0)
    assert speaker.advance(10).any()


def test_pause_while_idle_and_resume_do_not_play_anything_early() -> None:
    output = AudioOutput(RATE_HZ, prebuffer_ms=0.0)
    output.pause()
    output.pause()  # idempotent
    buf = np.empty(240, dtype=np.int16)
    output.pull_into(buf)
    output.push("item_a", 0, ramp(960).tobytes())
    output.end("item_a", 0)
    assert output.pull_into(buf) == 0
    assert not buf.any()
    output.resume()
    assert output.pull_into(buf) == 240
    assert np.array_equal(buf[96:], ramp(240)[96:])


def decide(f: FalseInterruptionFilter, *steps: tuple[str, float, str]) -> Decision | None:
    result = None
    for kind, at_ms, text in steps:
        if kind == "onset":
            f.onset(at_ms)
        elif kind == "started":
            result = f.speech_started(at_ms) or result
        elif kind == "stopped":
            result = f.speech_stopped(at_ms) or result
        elif kind == "transcript":
            result = f.transcript(text, at_ms) or result
        else:
            result = f.poll(at_ms) or result
    return result


@pytest.mark.parametrize(
    ("steps", "action", "reason"),
    [
        ([("onset", 0, ""), ("poll", 500, ""), ("poll", 800, "")], "resume", "unconfirmed"),
        (
            [
                ("onset", 0, ""),
                ("started", 200, ""),
                ("stopped", 600, ""),
                ("transcript", 900, "Mm-hmm."),
            ],
            "resume",
            "filler",
        ),
        (
            [("onset", 0, ""), ("started", 200, ""), ("stopped", 500, ""), ("transcript", 700, "")],
            "resume",
            "filler",
        ),
        (
            [
                ("onset", 0, ""),
                ("started", 150, ""),
                ("stopped", 1500, ""),
                ("transcript", 1800, "Move it to Friday"),
            ],
            "cut",
            "transcript",
        ),
        (
            [("onset", 0, ""), ("started", 150, ""), ("stopped", 1500, ""), ("poll", 3000, "")],
            "cut",
            "speech",
        ),
        (
            [("onset", 0, ""), ("started", 150, ""), ("stopped", 400, ""), ("poll", 1900, "")],
            "resume",
            "short",
        ),
    ],
)
def test_decisions(steps: list[tuple[str, float, str]], action: str, reason: str) -> None:
    f = FalseInterruptionFilter()
    d = decide(f, *steps)
    assert d is not None
    assert (d.action, d.reason) == (action, reason)
    assert not f.pending
    assert f.decisions == [d]


def test_without_transcripts_a_long_turn_cuts_while_it_goes_on() -> None:
    f = FalseInterruptionFilter(wait_for_transcript=False, min_turn_ms=500)
    f.onset(0)
    assert f.speech_started(100) is None
    assert f.poll(500) is None
    d = f.poll(600)
    assert d is not None
    assert (d.action, d.reason) == ("cut", "speech")


def test_nothing_happens_without_an_onset_and_bad_parameters_are_refused() -> None:
    f = FalseInterruptionFilter(fillers=["yeah", "Uh-huh!"])
    assert f.speech_started(0) is None
    assert f.transcript("yeah", 10) is None
    assert f.poll(10**6) is None
    f.onset(0)
    f.speech_started(10)
    d = f.transcript("Uh-huh, yeah.", 20)
    assert d is not None
    assert d.action == "resume"
    for bad in (
        {"window_ms": 0},
        {"min_turn_ms": -1},
        {"transcript_timeout_ms": True},
        {"vad_silence_ms": -5},
    ):
        with pytest.raises(ConfigurationError):
            FalseInterruptionFilter(**bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="collection"):
        FalseInterruptionFilter(fillers="yeah")


def test_the_vads_trailing_silence_is_not_counted_as_speech() -> None:
    f = FalseInterruptionFilter(wait_for_transcript=False, min_turn_ms=600, vad_silence_ms=500)
    f.onset(0)
    f.speech_started(50)
    d = f.speech_stopped(850)  # 300 ms of cough, then the VAD's 500 ms of silence
    assert d is not None
    assert (d.action, d.reason) == ("resume", "short")
