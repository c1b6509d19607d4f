"""Synthesised speech for the audio tests, the same whatever ran before.

espeak-ng keeps state from one utterance to the next (its pitch flutter, phase and cycle
counters are library globals that neither ``espeak_Initialize`` nor a random seed resets), so
the shared engine's audio for a text depends on everything the process spoke before: in a full
run that is what earlier tests and the local server's speech threads said, in an order that
depends on load. A signal a test's thresholds were set on must not change with that: each line
here is spoken by a fresh engine in a child process (``python -m tests.audio.speech TEXT
VOICE``), so it is a function of the text, the voice and the installed espeak-ng only.
"""

from __future__ import annotations

import subprocess
import sys
from functools import cache

import numpy as np
import numpy.typing as npt

from tests.children import child_env

#: Generous: a child imports numpy and loads espeak-ng, under a loaded machine's scheduling.
_CHILD_TIMEOUT_S = 120.0


@cache
def spoken(text: str, voice: str) -> tuple[npt.NDArray[np.int16], int]:
    """``text`` in ``voice`` as a fresh espeak-ng engine speaks it: (PCM16, rate in Hz)."""
    child = subprocess.run(
        [sys.executable, "-m", "tests.audio.speech", text, voice],
        env=child_env(),
        capture_output=True,
        timeout=_CHILD_TIMEOUT_S,
        check=False,
    )
    if child.returncode != 0:
        raise RuntimeError(f"speaking {text!r} failed: {child.stderr.decode(errors='replace')}")
    rate_hz = int.from_bytes(child.stdout[:4], "little")
    return np.frombuffer(child.stdout[4:], dtype="<i2").astype(np.int16), rate_hz


def main(argv: list[str]) -> int:
    from voxwire.server.engines.tts import EspeakEngine

    speech = EspeakEngine.shared().synthesize(argv[0], argv[1])
    sys.stdout.buffer.write(speech.rate_hz.to_bytes(4, "little") + speech.pcm.tobytes())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
