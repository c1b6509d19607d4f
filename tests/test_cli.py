"""The voxwire command, run as a real subprocess."""

from __future__ import annotations

import subprocess
import sys
import wave
from pathlib import Path

import numpy as np

from voxwire.audio import Resampler, read_wav, write_wav


def voxwire(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "voxwire.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_info_self_check_passes() -> None:
    p = voxwire("info")
    assert p.returncode == 0, p.stderr
    assert "resampler kernel:" in p.stdout
    assert "48000->24000" in p.stdout


def test_resample_wav_round_trip(tmp_path: Path) -> None:
    t = np.arange(44100) / 44100
    stereo = np.stack([np.sin(2 * np.pi * 440 * t), np.sin(2 * np.pi * 440 * t)], axis=1)
    pcm = (stereo * 10000).astype(np.int16).reshape(-1)
    src = tmp_path / "in.wav"
    with wave.open(str(src), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(44100)
        w.writeframes(pcm.tobytes())
    dst = tmp_path / "out.wav"
    p = voxwire("resample", str(src), str(dst), "--rate", "24000")
    assert p.returncode == 0, p.stderr
    out = read_wav(dst)
    assert out.rate_hz == 24000
    assert out.source_channels == 1
    assert len(out.pcm) == 24000
    # The 440 Hz tone survives with its level, aligned in time: the whole-sample part of the
    # delay is removed, the fraction (the filter centre falls between output samples) remains.
    d = Resampler(44100, 24000).output_delay()
    n = np.arange(24000) + round(d) - d
    expected = np.sin(2 * np.pi * 440 * n / 24000) * 10000
    assert np.max(np.abs(out.pcm[200:-200] - expected[200:-200])) <= 3


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    src = tmp_path / "in.wav"
    write_wav(src, np.zeros(100, np.int16), 16000)
    p = voxwire("resample", str(src), str(tmp_path / "o.wav"), "--rate", "0")
    assert p.returncode == 2
    assert "out_rate_hz=0" in p.stderr


def test_bench_prints_the_audio_path_table() -> None:
    p = voxwire("bench", "--rounds", "3")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    for what in (
        "resample 48000->24000 (hq)",
        "ring push + pop",
        "delta -> playable, 20 ms delta, 48 kHz device",
        "G.711 mu-law encode",
        "G.711 A-law decode",
    ):
        (line,) = [line for line in lines if line.startswith(what)]
        assert float(line[48:57]) > 0  # a measured time, in µs


def test_output_paths_are_checked_before_anything_runs(tmp_path: Path) -> None:
    """``demo --report``, ``demo --out`` and ``quickstart --out`` into a folder that does not
    exist (or onto a folder): a usage error at once, before any session — not after the whole
    conversation ran."""
    missing = tmp_path / "missing"
    cases = [
        ("demo", "--report", str(missing / "r.html")),
        ("demo", "--out", str(missing / "x.wav")),
        ("quickstart", "--out", str(missing / "x.wav")),
        ("quickstart", "--out", str(tmp_path)),
    ]
    for command, option, path in cases:
        p = voxwire(command, option, path)
        assert p.returncode == 2, (command, option, p.stdout, p.stderr)
        assert p.stdout == ""  # nothing ran
        last = p.stderr.splitlines()[-1]
        assert last.startswith(f"voxwire {command}: error: argument {option}: {path}")
        assert "no folder" in last or "is a folder" in last


def test_demo_aec_runs_the_room_and_the_room_rejects_what_it_would_ignore() -> None:
    """``--aec`` alone used to be ignored (the plain demo ran, with no echo to cancel): it runs
    the speakerphone room with the canceller on. The room does not take --json, --url, --out,
    --report or --realtime (it used to ignore them): exit 2 naming them."""
    p = voxwire("demo", "--aec", "--json", "--report", "r.html")
    assert p.returncode == 2
    assert p.stdout == ""
    assert "--json and --report do not apply to it" in p.stderr
    p = voxwire("demo", "--aec")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith("speakerphone room (")
    assert "echo cancellation on (the 'after' picture)" in p.stdout.splitlines()[0]
