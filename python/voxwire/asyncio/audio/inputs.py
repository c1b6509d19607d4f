"""What the application hands the session as input audio, checked and turned into bytes."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["audio_bytes"]


def audio_bytes(pcm: bytes | bytearray | memoryview | npt.NDArray[np.int16]) -> bytes:
    if isinstance(pcm, bytes | bytearray | memoryview):
        return bytes(pcm)
    if isinstance(pcm, np.ndarray):
        if pcm.dtype != np.int16:
            raise TypeError(
                f"send_audio() got a numpy array of {pcm.dtype}: expected int16 PCM "
                "(convert float audio with (x * 32767).astype(np.int16))"
            )
        if pcm.ndim != 1 and not (pcm.ndim == 2 and pcm.shape[1] == 1):
            raise ValueError(
                f"send_audio() got an array of shape {pcm.shape}: expected mono, shape (n,) or "
                "(n, 1) (mix down with voxwire.audio.to_mono)"
            )
        return pcm.astype("<i2", copy=False).tobytes()
    raise TypeError(f"send_audio() got {type(pcm).__name__}: expected bytes or a numpy int16 array")
