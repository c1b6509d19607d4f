"""AudioInput: downmix, resample, G.711, fixed frames, mute, flush, bad parameters."""

from __future__ import annotations

import numpy as np
import pytest

from tests.audio.signals import fit_sine, sine, to_int16
from voxwire.audio import AudioInput, BargeInDetector, g711
from voxwire.exceptions import ConfigurationError


def test_stereo_float_at_48k_becomes_20ms_frames_of_24k_pcm16() -> None:
    sent: list[bytes] = []
    pipeline = AudioInput(48_000, 2, on_frame=sent.append)
    left = sine(1000, 48_000, 48_000, 0.5).astype(np.float32)
    stereo = np.stack([left, np.zeros_like(left)], axis=1)  # (frames, channels), as a device gives
    returned = []
    for start in range(0, len(stereo), 441):  # blocks that do not line up with frames
        returned += pipeline.process(stereo[start : start + 441])
    assert returned == sent
    assert all(len(f) == 960 for f in sent)  # 480 samples of PCM16
    assert (
        pipeline.frames_sent == len(sent) == 50
    )  # 1 s of input is 1 s of output (the delay is leading silence)
    pcm = np.frombuffer(b"".join(sent), dtype="<i2")
    amplitude, _, resid = fit_sine(pcm, 1000, 24_000, 200)
    assert amplitude == pytest.approx(0.25 * 32767, rel=0.01)  # one of two channels: half
    assert np.sqrt(np.mean(resid**2)) < 5


def test_chunking_does_not_change_the_output() -> None:
    tone = to_int16(sine(440, 44_100, 44_100, 9000))
    whole = AudioInput(44_100)
    chunked = AudioInput(44_100)
    a = whole.process(tone) + whole.flush()
    b: list[bytes] = []
    rng = np.random.default_rng(7)
    pos = 0
    while pos < len(tone):
        step = int(rng.integers(1, 2000))
        b += chunked.process(tone[pos : pos + step].tobytes())
        pos += step
    b += chunked.flush()
    assert a == b
    # 1 s, plus the resampler's delay drained by the flush, padded to a whole frame.
    assert len(a) == 51


@pytest.mark.parametrize(
    ("fmt", "decode"), [("audio/pcmu", g711.ulaw_decode), ("audio/pcma", g711.alaw_decode)]
)
def test_g711_formats_are_8khz_frames_encoded_by_the_core(fmt: str, decode: object) -> None:
    pipeline = AudioInput(16_000, format=fmt, frame_ms=20)
    assert (pipeline.rate_hz, pipeline.frame_samples, pipeline.frame_bytes) == (8000, 160, 160)
    frames = pipeline.process(to_int16(sine(500, 16_000, 16_000, 12_000)))
    assert all(len(f) == 160 for f in frames)
    pcm = decode(b"".join(frames))  # type: ignore[operator]
    amplitude, _, _ = fit_sine(pcm, 500, 8000, 100)
    assert amplitude == pytest.approx(12_000, rel=0.02)


def test_mute_drops_frames_and_counts_them() -> None:
    sent: list[bytes] = []
    pipeline = AudioInput(24_000, frame_ms=10, on_frame=sent.append)
    pipeline.process(np.ones(2400, dtype=np.int16))
    pipeline.muted = True
    assert pipeline.process(np.ones(2400, dtype=np.int16)) == []
    pipeline.muted = False
    pipeline.process(np.ones(1200, dtype=np.int16))
    assert (pipeline.frames_sent, pipeline.frames_muted, len(sent)) == (15, 10, 15)


def test_flush_pads_the_last_partial_frame() -> None:
    pipeline = AudioInput(24_000)
    assert pipeline.process(np.full(500, 3, dtype=np.int16)) == [np.full(480, 3, "<i2").tobytes()]
    assert pipeline.buffered_samples == 20
    (last,) = pipeline.flush()
    assert np.frombuffer(last, "<i2").tolist() == [3] * 20 + [0] * 460
    assert pipeline.flush() == []


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0,), {}, "source_rate_hz=0 is invalid"),
        ((48_000, 0), {}, "source_channels=0 is invalid"),
        ((48_000,), {"format": "audio/opus"}, "is not a Realtime audio format"),
        ((48_000,), {"frame_ms": 0}, "frame_ms=0 is invalid"),
        ((48_000,), {"frame_ms": 2.5}, "frame_ms=2.5 is invalid"),
        ((48_000,), {"quality": "best"}, "quality='best' is invalid"),
        ((48_000,), {"barge_in": BargeInDetector(16_000)}, "BargeInDetector\\(rate_hz=24000\\)"),
    ],
)
def test_bad_parameters_fail_at_construction(
    args: tuple[int, ...], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        AudioInput(*args, **kwargs)  # type: ignore[arg-type]


def test_bad_audio_is_refused_with_what_was_expected() -> None:
    pipeline = AudioInput(48_000, 2)
    with pytest.raises(ValueError, match="got 3-channel frames, expected 2"):
        pipeline.process(np.zeros((10, 3), dtype=np.int16))
    with pytest.raises(TypeError, match="int16 or float32, got float64"):
        pipeline.process(np.zeros(10))
    with pytest.raises(ValueError, match="not a whole number of 2-channel frames"):
        pipeline.process(b"\0" * 6)
