"""WAV and memory sources, virtual speakers (stepped and real time), bad WAV files."""

from __future__ import annotations

import struct
import threading
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from tests.audio.signals import sine, to_int16, until
from voxwire.audio import (
    AudioInput,
    MemoryInput,
    MemoryOutput,
    WavFileInput,
    WavFileOutput,
    read_wav,
    write_wav,
)
from voxwire.exceptions import ConfigurationError, InvalidState


def test_wav_input_delivers_the_file_in_blocks(tmp_path: Path) -> None:
    tone = to_int16(sine(300, 16_000, 16_050, 8000))
    write_wav(tmp_path / "in.wav", tone, 16_000)
    source = WavFileInput(tmp_path / "in.wav", block_ms=20)
    blocks = list(source.blocks())
    assert [len(b) for b in blocks] == [320] * 50 + [50]
    assert np.array_equal(np.concatenate(blocks), tone)
    assert source.duration_ms == pytest.approx(1003.125)


def test_realtime_delivery_is_paced_and_fast_delivery_is_not() -> None:
    pcm = np.arange(2400, dtype=np.int16)  # 100 ms at 24 kHz
    got: list[np.ndarray] = []
    paced = MemoryInput(pcm, 24_000, block_ms=20)
    t0 = time.monotonic()
    paced.start(got.append)
    assert paced.wait(5)
    assert time.monotonic() - t0 >= 0.095
    assert np.array_equal(np.concatenate(got), pcm)
    done = threading.Event()
    # A minute of audio, delivered unpaced: far sooner than a minute, however loaded the machine
    # (a bound of 50 ms on 100 ms of audio failed whenever the thread was not scheduled).
    minute = np.zeros(60 * 24_000, dtype=np.int16)
    fast = MemoryInput(minute, 24_000, block_ms=20)
    t0 = time.monotonic()
    fast.start(lambda block: None, realtime=False, on_end=done.set)
    assert fast.wait(30)
    assert done.is_set()
    assert time.monotonic() - t0 < 30.0
    with pytest.raises(InvalidState, match="already started"):
        fast.start(got.append)


def test_an_error_in_the_callback_is_raised_by_wait() -> None:
    source = MemoryInput(np.zeros(480, dtype=np.int16), 24_000)

    def broken(block: np.ndarray) -> None:
        raise RuntimeError("session gone")

    source.start(broken, realtime=False)
    with pytest.raises(RuntimeError, match="session gone"):
        source.wait(5)


def test_wav_output_writes_exactly_what_the_memory_speaker_played(tmp_path: Path) -> None:
    tone = to_int16(sine(440, 24_000, 7200, 9000))
    speakers = [
        MemoryOutput(latency_ms=30, period_ms=10),
        WavFileOutput(tmp_path / "out.wav", latency_ms=30, period_ms=10),
    ]
    for speaker in speakers:
        speaker.advance(3)
        speaker.output.push("a", 0, tone.tobytes())
        speaker.advance(20)
        speaker.output.interrupt()
        speaker.advance(5)
    speakers[1].close()
    speakers[1].close()  # idempotent
    written = read_wav(tmp_path / "out.wav")
    assert written.rate_hz == 24_000
    assert np.array_equal(written.pcm, speakers[0].played())
    assert len(written.pcm) == 28 * 240
    with pytest.raises(InvalidState, match=r"read .*out\.wav after close"):
        speakers[1].played()


def test_speaker_runs_in_real_time_and_refuses_manual_steps_meanwhile() -> None:
    speaker = MemoryOutput(period_ms=10, prebuffer_ms=0)
    speaker.output.push("a", 0, np.full(2400, 5, dtype=np.int16).tobytes())
    began = time.monotonic()
    speaker.start()
    try:
        with pytest.raises(InvalidState, match="stop\\(\\) it before"):
            speaker.advance(1)
        # Until 0.2 s are played, however long that takes on a loaded machine.
        until(lambda: speaker.played_samples >= 4800)
    finally:
        speaker.stop()
    elapsed_s = time.monotonic() - began
    played = speaker.played()
    # In real time: never ahead of the wall clock (one period at most, the one due now).
    assert 0.2 <= len(played) / 24_000 <= elapsed_s + 0.01
    start = int(np.flatnonzero(played)[0])
    assert np.all(played[start : start + 2400] == 5)
    tail = played[start + 2400 :]  # fade-out from the last sample (4 ms), then silence
    assert np.all(np.diff(tail.astype(np.int32)) <= 0)
    assert np.all(tail[96:] == 0)


def test_a_wav_file_through_the_input_pipeline(tmp_path: Path) -> None:
    write_wav(tmp_path / "in.wav", to_int16(sine(440, 44_100, 44_100, 5000)), 44_100)
    source = WavFileInput(tmp_path / "in.wav")
    pipeline = AudioInput(source.rate_hz, source.channels)
    frames = [f for block in source.blocks() for f in pipeline.process(block)] + pipeline.flush()
    assert len(frames) == 51


def _riff(fmt_code: int, bits: int, data: bytes, rate: int = 8000) -> bytes:
    block = bits // 8
    fmt = struct.pack("<HHIIHH", fmt_code, 1, rate, rate * block, block, bits)
    body = (
        b"WAVE"
        + b"fmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )
    return b"RIFF" + struct.pack("<I", len(body)) + body


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"ID3 this is an mp3", "not a WAV file \\(it does not start with RIFF"),
        (b"", "not a WAV file \\(empty\\)"),
        (_riff(3, 32, b"\0" * 40), "the samples are floating point"),
        (_riff(1, 8, b"\0" * 40), "8-bit samples are not supported"),
        (_riff(1, 24, b"\0" * 42), "24-bit samples are not supported"),
    ],
)
def test_bad_wav_files_name_the_file_and_the_problem(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.wav"
    path.write_bytes(content)
    with pytest.raises(ConfigurationError, match=f"bad.wav: .*{message}"):
        WavFileInput(path)


def test_missing_and_unreadable_wav_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"nope\.wav: no such file"):
        WavFileInput(tmp_path / "nope.wav")
    with pytest.raises(ConfigurationError, match="cannot be read"):
        read_wav(tmp_path)  # a directory
    with pytest.raises(ConfigurationError, match="cannot be written"):
        WavFileOutput(tmp_path / "missing-dir" / "out.wav")


def test_bad_memory_input() -> None:
    with pytest.raises(ConfigurationError, match="1-D numpy int16"):
        MemoryInput(np.zeros(10, dtype=np.float32), 24_000)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="block_ms=0 is invalid"):
        MemoryInput(np.zeros(10, dtype=np.int16), 24_000, block_ms=0)


def test_wav_header_of_the_output_is_mono_pcm16(tmp_path: Path) -> None:
    with WavFileOutput(tmp_path / "o.wav", 48_000) as speaker:
        speaker.advance(2)
    with wave.open(str(tmp_path / "o.wav")) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()) == (
            1,
            2,
            48_000,
            1920,
        )
