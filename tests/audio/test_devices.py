"""SoundDeviceInput / SoundDeviceOutput against real PortAudio on ALSA's null device.

No sound card is needed: each scenario runs in a child process (tests/audio/device_probe.py)
whose HOME holds an ``.asoundrc`` making ALSA's default device the null plugin (the recipe in
docs/devices.md, 'Audio devices'). The null device is not paced by a clock: it takes buffers as
fast as the callback fills them, so these tests check the plumbing and the accounting, not timing.
"""

from __future__ import annotations

import ctypes.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.children import child_env

ROOT = Path(__file__).resolve().parents[2]
#: docs/devices.md's recipe ("Audio devices"): playback to the null plugin; capture from
#: /dev/zero through the file plugin, because the null plugin's capture leaves the buffer
#: unwritten (garbage, NaN as float32, on Debian 12's alsa-lib 1.2.8).
ASOUNDRC = """\
pcm.!default {
    type asym
    playback.pcm {
        type plug
        slave.pcm "null"
    }
    capture.pcm {
        type plug
        slave.pcm {
            type file
            slave.pcm "null"
            file "/dev/null"
            infile "/dev/zero"
            format "raw"
        }
    }
}
"""

pytestmark = pytest.mark.skipif(
    ctypes.util.find_library("portaudio") is None,
    reason="the PortAudio library is not installed (apt install libportaudio2)",
)


def probe(scenario: str, home: Path) -> dict[str, object]:
    (home / ".asoundrc").write_text(ASOUNDRC)
    env = child_env(HOME=str(home))
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "audio" / "device_probe.py"), scenario],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_output_plays_everything_through_portaudio_and_the_clock_counts_it(tmp_path: Path) -> None:
    got = probe("output", tmp_path)
    assert got["done"] is True
    assert got["error"] == "None"
    assert got["active_after"] is False
    assert isinstance(got["latency_s"], float)
    assert got["latency_s"] > 0
    assert got["latency_samples"] == round(got["latency_s"] * 48_000)
    # 200 ms at 24 kHz, resampled to 48 kHz, all heard (the device ran past it plus its latency);
    # reported at the item's own rate. The resampler's warm-up (its delay, ~1.7 ms) is not
    # counted as the item's (docs/audio-output.md, "Warm-up"): the count is the item's sound.
    played, queued = got["played"]  # type: ignore[misc]
    assert played == queued
    assert queued == 4800
    assert got["underruns"] == 0


def test_input_captures_blocks_into_session_frames(tmp_path: Path) -> None:
    got = probe("input", tmp_path)
    assert got == {"done": True, "sizes": [960], "error": "None"}


def test_missing_devices_are_named_with_what_is_available(tmp_path: Path) -> None:
    got = probe("errors", tmp_path)
    assert got["inputs"] == [[0, "default"]]
    assert got["outputs"] == [[0, "default"]]
    assert got["by_name"] == (
        "AudioDeviceError: no input device named 'no such microphone'; available: 0: 'default'"
    )
    assert (
        got["by_index"]
        == "AudioDeviceError: no output device with index 99; available: 0: 'default'"
    )
    assert str(got["bad_rate"]).startswith("ConfigurationError: rate_hz=0 is invalid")
