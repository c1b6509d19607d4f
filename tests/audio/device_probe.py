"""Runs one sounddevice scenario and prints the result as JSON (used by test_devices.py).

Run in a child process whose HOME holds an ``.asoundrc`` routing ALSA's default device to the
null plugin: PortAudio reads the ALSA configuration once, when sounddevice is imported.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from voxwire.audio import AudioInput, SoundDeviceInput, SoundDeviceOutput, list_devices
from voxwire.exceptions import AudioDeviceError


def wait_for(condition: object, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.005)
    return False


def output() -> dict[str, object]:
    speaker = SoundDeviceOutput(rate_hz=48_000, period_ms=10, prebuffer_ms=20)
    audio = speaker.output
    audio.push("a", 0, np.full(4800, 1000, dtype=np.int16).tobytes())  # 200 ms at 24 kHz
    audio.end("a", 0)
    with speaker:
        speaker.start()
        latency_s = speaker.latency_s
        done = wait_for(lambda: audio.device_samples >= 9600 + audio.output_latency_samples + 960)
    played = audio.clock.played("a", 0)
    return {
        "done": done,
        "device": speaker.device_name,
        "latency_s": latency_s,
        "latency_samples": audio.output_latency_samples,
        "played": None if played is None else [played.played_samples, played.queued_samples],
        "underruns": audio.underruns,
        "error": repr(speaker.error),
        "active_after": speaker.active,
    }


def input_() -> dict[str, object]:
    frames: list[bytes] = []
    mic = SoundDeviceInput(rate_hz=44_100, channels=2, block_ms=10)
    pipeline = AudioInput(mic.rate_hz, mic.channels, on_frame=frames.append)
    with mic:
        mic.start(pipeline.process)
        done = wait_for(lambda: len(frames) >= 10)
    return {"done": done, "sizes": sorted({len(f) for f in frames}), "error": repr(mic.error)}


def errors() -> dict[str, object]:
    out: dict[str, object] = {"inputs": list_devices("input"), "outputs": list_devices("output")}
    for name, make in {
        "by_name": lambda: SoundDeviceInput("no such microphone"),
        "by_index": lambda: SoundDeviceOutput(99),
        "bad_rate": lambda: SoundDeviceOutput(rate_hz=0),
    }.items():
        try:
            make()
            out[name] = None
        except (AudioDeviceError, ValueError) as e:
            out[name] = f"{type(e).__name__}: {e}"
    return out


if __name__ == "__main__":
    scenario = {"output": output, "input": input_, "errors": errors}[sys.argv[1]]
    print(json.dumps(scenario()))
