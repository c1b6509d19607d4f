"""Audio inputs validated: device buffers of the wrong shape or dtype, non-finite microphone
samples, and WAV files whose header does not match the file (crafted cases and a seeded fuzz).
Real Rust ring, clock, resampler and down-mixer."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import numpy as np
import pytest

from voxwire.audio import AudioInput, AudioOutput, read_wav, write_wav
from voxwire.exceptions import ConfigurationError

# --- AudioOutput.pull_into ------------------------------------------------------------------------


def _output_with(samples: int) -> AudioOutput:
    out = AudioOutput(24_000, prebuffer_ms=0, fade_ms=0)
    pcm = (np.arange(samples) % 1000 + 1).astype(np.int16)
    assert out.push("a", 0, pcm.tobytes()) == 0
    out.end("a", 0)
    return out


@pytest.mark.parametrize("channels", [2, 3, 6])
def test_a_multichannel_buffer_gets_the_mono_sample_on_every_channel(channels: int) -> None:
    out = _output_with(480)
    stereo = np.full((240, channels), -7, dtype=np.int16)
    assert out.pull_into(stereo) == 240  # frames, not 240 * channels
    expected = (np.arange(240) % 1000 + 1).astype(np.int16)
    for channel in range(channels):
        assert np.array_equal(stereo[:, channel], expected)
    assert out.device_samples == 240
    assert out.ring.consumed_samples == 240
    assert out.pull_into(np.zeros((240, channels), dtype=np.int16)) == 240
    assert out.ring.readable_samples == 0


def test_a_strided_mono_buffer_is_filled_in_place() -> None:
    out = _output_with(100)
    frame = np.zeros((100, 2), dtype=np.int16)
    column = frame[:, 1]  # a non-contiguous (n,) view
    assert out.pull_into(column) == 100
    assert np.array_equal(frame[:, 1], (np.arange(100) + 1).astype(np.int16))
    assert not frame[:, 0].any()


@pytest.mark.parametrize(
    ("buffer", "error", "words"),
    [
        (np.zeros(240, dtype=np.float32), TypeError, "int16 buffer, got float32"),
        (np.zeros(240, dtype=">i2"), TypeError, "int16 buffer, got >i2"),
        (np.zeros(240, dtype=np.int32), TypeError, "int16 buffer, got int32"),
        (np.zeros((10, 2, 2), dtype=np.int16), ValueError, "got shape (10, 2, 2)"),
        (np.zeros((), dtype=np.int16), ValueError, "got shape ()"),
        (np.zeros((10, 0), dtype=np.int16), ValueError, "got shape (10, 0)"),
        ([0] * 240, TypeError, "numpy int16 array, got list"),
    ],
)
def test_a_wrong_buffer_is_refused_before_anything_is_consumed(
    buffer: object, error: type[Exception], words: str
) -> None:
    out = _output_with(480)
    with pytest.raises(error) as caught:
        out.pull_into(buffer)  # type: ignore[arg-type]
    assert words in str(caught.value)
    assert out.ring.consumed_samples == 0
    assert out.device_samples == 0


def test_a_read_only_buffer_is_refused() -> None:
    out = _output_with(10)
    frozen = np.zeros(10, dtype=np.int16)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="writable buffer"):
        out.pull_into(frozen)
    assert out.ring.consumed_samples == 0


def test_a_seeded_fuzz_of_device_buffers_counts_frames_or_refuses() -> None:
    rng = np.random.default_rng(1903)
    out = _output_with(24_000)
    dtypes = [np.int16, np.float32, np.int32, np.dtype(">i2"), np.uint8]
    outcomes = {"filled": 0, "refused": 0}
    for _ in range(500):
        dtype = dtypes[rng.integers(len(dtypes))]
        shape = tuple(int(n) for n in rng.integers(0, 5, rng.integers(0, 4)) * 16)
        buffer = np.zeros(shape, dtype=dtype)
        buffer.flags.writeable = bool(rng.integers(0, 4))
        before = (out.device_samples, out.ring.consumed_samples)
        fits = (
            buffer.dtype == np.int16
            and buffer.ndim in (1, 2)
            and (buffer.ndim == 1 or buffer.shape[1] >= 1)
            and buffer.flags.writeable
        )
        try:
            got = out.pull_into(buffer)
        except (TypeError, ValueError):
            outcomes["refused"] += 1
            refused_cleanly = (out.device_samples, out.ring.consumed_samples) == before
            assert refused_cleanly
            assert not fits
            continue
        assert fits
        frames = buffer.shape[0]
        assert out.device_samples == before[0] + frames
        assert out.ring.consumed_samples == before[1] + got
        assert 0 <= got <= frames
        outcomes["filled"] += 1
    print(f"pull_into fuzz: 500 buffers -> {outcomes}")
    assert outcomes["filled"] > 20
    assert outcomes["refused"] > 200


# --- AudioInput (the microphone path) ------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_microphone_samples_are_refused(bad: float) -> None:
    frames: list[bytes] = []
    mic = AudioInput(48_000, 2, on_frame=frames.append)
    block = np.zeros((480, 2), dtype=np.float32)
    block[123, 1] = bad
    with pytest.raises(ValueError, match="non-finite sample") as caught:
        mic.process(block)
    message = str(caught.value)
    assert "non-finite sample" in message
    assert "index 247" in message  # interleaved: frame 123, channel 1
    assert "-1.0 ..= 1.0" in message
    assert frames == []
    assert mic.buffered_samples == 0
    # The pipeline is untouched: a clean block afterwards is framed as usual.
    assert len(mic.process(np.zeros((960, 2), dtype=np.float32))) == 1


@pytest.mark.parametrize(
    ("data", "error", "words"),
    [
        (np.zeros((480, 3), dtype=np.int16), ValueError, "got 3-channel frames, expected 2"),
        (np.zeros((4, 4, 2), dtype=np.int16), ValueError, "got shape (4, 4, 2)"),
        (np.zeros(960, dtype=np.float64), TypeError, "int16 or float32, got float64"),
        (np.zeros(960, dtype=np.uint8), TypeError, "int16 or float32, got uint8"),
        (b"\x00" * 6, ValueError, "not a whole number of 2-channel frames"),
        (np.zeros(961, dtype=np.int16), ValueError, "not a whole number of 2-channel frames"),
        ([0.0] * 960, TypeError, "got list"),
    ],
)
def test_microphone_buffers_of_the_wrong_shape_or_dtype_fail_clearly(
    data: object, error: type[Exception], words: str
) -> None:
    mic = AudioInput(48_000, 2)
    with pytest.raises(error) as caught:
        mic.process(data)  # type: ignore[arg-type]
    assert words in str(caught.value)


def test_a_seeded_fuzz_of_float_blocks_never_passes_garbage_on() -> None:
    rng = np.random.default_rng(19)
    refused = framed = finite_refused = 0
    reasons: set[str] = set()
    for _ in range(400):
        mic = AudioInput(24_000)
        block = rng.uniform(-1.5, 1.5, 480).astype(np.float32)
        for index in rng.integers(0, 480, rng.integers(0, 3)):
            block[index] = rng.choice([np.nan, np.inf, -np.inf])
        try:
            frames = mic.process(block)
        except ValueError as exc:
            reasons.add(str(exc).split(" (")[0])
            finite_refused += bool(np.isfinite(block).all())
            refused += 1
            continue
        assert np.isfinite(block).all()
        pcm = np.frombuffer(b"".join(frames), dtype="<i2")
        expected = np.clip(np.rint(block * 32767.0), -32768, 32767).astype(np.int16)
        assert np.array_equal(pcm, expected)
        framed += 1
    assert reasons == {"float32 audio holds a non-finite sample"}
    assert finite_refused == 0
    assert refused > 50, refused
    assert framed > 50, framed


# --- read_wav -------------------------------------------------------------------------------------


def wav_bytes(
    *,
    channels: int = 1,
    rate_hz: int = 16_000,
    bits: int = 16,
    tag: int = 1,
    frames: int = 100,
    data_size: int | None = None,
    byte_rate: int | None = None,
    block_align: int | None = None,
    riff_size: int | None = None,
    extra: bytes = b"",
) -> bytes:
    block = block_align if block_align is not None else channels * bits // 8
    rate = byte_rate if byte_rate is not None else rate_hz * block
    samples = (np.arange(frames * channels) % 200).astype("<i2").tobytes()
    samples = samples[: frames * channels * bits // 8] if bits <= 16 else samples
    fmt = struct.pack("<HHIIHH", tag, channels, rate_hz, rate, block, bits)
    size = data_size if data_size is not None else len(samples)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + extra
    body += b"data" + struct.pack("<I", size) + samples
    return b"RIFF" + struct.pack("<I", riff_size if riff_size is not None else len(body)) + body


CRAFTED = {
    "rate 0": (wav_bytes(rate_hz=0), "sample rate of 0 Hz"),
    "rate too high": (wav_bytes(rate_hz=10_000_000), "sample rate of 10000000 Hz"),
    "no channels": (wav_bytes(channels=0, block_align=0), "0 channels"),
    "100 channels": (wav_bytes(channels=100, frames=1), "100 channels"),
    "data size beyond the file": (
        wav_bytes(data_size=10_000),
        "says 10000 bytes but only 200 follow",
    ),
    "riff size beyond the file": (wav_bytes(riff_size=100_000), "the file has 244"),
    "partial frame": (
        wav_bytes(channels=2, frames=10, data_size=39),
        "holds 39 bytes, not a whole number of 2-channel frames",
    ),
    "block align wrong": (wav_bytes(block_align=4), "block size is 4 bytes"),
    "byte rate wrong": (wav_bytes(byte_rate=1), "byte rate is 1"),
    "8-bit": (wav_bytes(bits=8), "8-bit samples"),
    "float": (wav_bytes(tag=3, bits=32), "floating point"),
    "mu-law": (wav_bytes(tag=7), "format code 0x7"),
    "not riff": (b"RIFX" + wav_bytes()[4:], "not a WAV file"),
    "empty": (b"", "not a WAV file (empty)"),
    "only the riff header": (b"RIFF\x04\x00\x00\x00WAVE", "no 'fmt ' and 'data' chunks"),
    "short fmt": (
        b"RIFF\x14\x00\x00\x00WAVEfmt \x08\x00\x00\x00" + b"\x01\x00" * 4,
        "the 'fmt ' chunk has 8 bytes",
    ),
    "data before fmt": (b"RIFF\x0c\x00\x00\x00WAVEdata\x00\x00\x00\x00", "before the 'fmt '"),
}


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_crafted_headers_fail_with_what_is_wrong(tmp_path: Path, case: str) -> None:
    data, words = CRAFTED[case]
    path = tmp_path / "bad.wav"
    path.write_bytes(data)
    with pytest.raises(ConfigurationError) as caught:
        read_wav(path)
    assert str(path) in str(caught.value)
    assert words in str(caught.value), str(caught.value)


def test_a_valid_file_reads_back_and_an_odd_chunk_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "ok.wav"
    path.write_bytes(wav_bytes(channels=2, frames=50, extra=b"LIST\x03\x00\x00\x00abc\x00"))
    audio = read_wav(path)
    assert (audio.rate_hz, audio.source_channels, len(audio.pcm)) == (16_000, 2, 50)
    pcm = np.arange(300, dtype=np.int16)
    write_wav(tmp_path / "w.wav", pcm, 24_000)
    back = read_wav(tmp_path / "w.wav")
    assert back.rate_hz == 24_000
    assert np.array_equal(back.pcm, pcm)
    with pytest.raises(ConfigurationError, match="rate_hz=0"):
        write_wav(tmp_path / "z.wav", pcm, 0)


def _mutate(rng: random.Random, data: bytearray) -> bytearray:
    if not data:
        return data
    choice = rng.randrange(4)
    if choice == 0:  # one header field set to an extreme or random value
        offset = rng.choice([4, 16, 20, 22, 24, 28, 32, 34, 40])
        value = rng.choice([0, 1, 0xFFFF, 0xFFFFFFFF, rng.getrandbits(32)])
        width = 2 if offset in (20, 22, 32, 34) else 4
        data[offset : offset + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
    elif choice == 1:  # truncated anywhere
        del data[rng.randrange(len(data)) :]
    elif choice == 2:  # random bytes flipped, header first
        for _ in range(rng.randrange(1, 6)):
            data[rng.randrange(min(len(data), 64))] ^= 1 << rng.randrange(8)
    else:  # bytes inserted into the header
        at = rng.randrange(min(len(data), 48))
        data[at:at] = rng.randbytes(rng.randrange(1, 9))
    return data


def test_a_seeded_fuzz_of_wav_headers_raises_only_configuration_errors(tmp_path: Path) -> None:
    rng = random.Random(19)
    path = tmp_path / "fuzz.wav"
    seeds = [wav_bytes(), wav_bytes(channels=2, frames=33), wav_bytes(rate_hz=8_000, frames=7)]
    outcomes = {"read": 0, "refused": 0}
    unnamed = 0
    for _ in range(3_000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randrange(1, 3)):
            data = _mutate(rng, data)
        path.write_bytes(bytes(data))
        try:
            audio = read_wav(path)
        except ConfigurationError as exc:
            unnamed += str(path) not in str(exc)
            outcomes["refused"] += 1
            continue
        # Whatever was read is consistent with what the header promised.
        assert 1 <= audio.rate_hz <= 768_000
        assert 1 <= audio.source_channels <= 64
        assert audio.pcm.dtype == np.int16
        assert audio.pcm.ndim == 1
        outcomes["read"] += 1
    print(f"read_wav fuzz: {outcomes['read'] + outcomes['refused']} cases, {outcomes}")
    assert unnamed == 0
    assert outcomes["refused"] > 1_000, outcomes
    assert outcomes["read"] > 50, outcomes
