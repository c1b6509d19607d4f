"""Synthesised speech for the audio tests, the same whatever ran before.

espeak-ng keeps state from one utterance to the next (its pitch flutter, phase and cycle
counters are library globals that neither ``espeak_Initialize`` nor a random seed resets), so
the shared engine's audio for a text depends on everything the process spoke before: in a full
run that is what earlier tests and the local server's speech threads said, in an order that
depends on load. A signal a test's thresholds were set on must not change with that: each line
here is spoken by a fresh engine in a child process (benches/aec_eval/speak.py, which the
echo evaluation's generator uses for the same reason), so it is a function of the text, the
voice and the installed espeak-ng only.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import numpy.typing as npt
from benches.aec_eval.speak import spoken as _fresh


@cache
def spoken(text: str, voice: str) -> tuple[npt.NDArray[np.int16], int]:
    """``text`` in ``voice`` as a fresh espeak-ng engine speaks it: (PCM16, rate in Hz)."""
    return _fresh(text, voice, 1.0)
