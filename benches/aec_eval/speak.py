"""One line spoken by a fresh espeak-ng engine, in a child process (used by generator.py).

espeak-ng keeps state from one utterance to the next (pitch flutter, phase and cycle counters
that neither re-initialising nor a random seed resets; tests/audio/speech.py), so a line spoken
by a process's shared engine depends on what it said before. A room's render must be a function
of its seed alone, so each line is spoken here: ``python -m benches.aec_eval.speak TEXT VOICE
SPEED`` writes the rate (4 bytes, little-endian) and the PCM16 samples to stdout.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import numpy.typing as npt

#: Generous: a child imports numpy and loads espeak-ng, under a loaded machine's scheduling.
_CHILD_TIMEOUT_S = 120.0


def spoken(text: str, voice: str, speed: float) -> tuple[npt.NDArray[np.int16], int]:
    """``text`` in ``voice`` at ``speed`` as a fresh engine speaks it: (PCM16, rate in Hz)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    child = subprocess.run(
        [sys.executable, "-m", "benches.aec_eval.speak", text, voice, repr(speed)],
        env=env,
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

    speech = EspeakEngine.shared().synthesize(argv[0], argv[1], float(argv[2]))
    pcm = np.asarray(speech.pcm, dtype="<i2")
    sys.stdout.buffer.write(speech.rate_hz.to_bytes(4, "little") + pcm.tobytes())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
