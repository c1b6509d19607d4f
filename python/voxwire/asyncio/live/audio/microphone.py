"""A :class:`~voxwire.asyncio.live.LiveSession`'s microphone: an audio source run into
``send_audio``.

The sources are the Realtime session's (:class:`~voxwire.audio.SoundDeviceInput`,
:class:`~voxwire.audio.WavFileInput`, :class:`~voxwire.audio.MemoryInput`, or anything with
``rate_hz``, ``channels``, ``start(callback)``, ``stop()``), and the pipeline too: each block is
mixed down, resampled by the Rust core to 24 kHz PCM16 and cut into frames by an
:class:`~voxwire.audio.AudioInput` on the source's thread; the frames cross to the event loop
once per block and go out as ``session.input_audio.append`` (dropped, and counted, while the
session is not open).

No local barge-in: GPT-Live hears the user while it speaks and decides itself whether that was
an interruption or a backchannel ("mm-hm"), so the client must not cut playback on speech.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Final, Protocol

from voxwire.asyncio.audio.microphone import AudioSource, check_source
from voxwire.audio.input import AudioInput

__all__ = ["LiveMicrophone"]

_FRAME_MS: Final = 20


class MicrophoneHost(Protocol):
    def accepts_audio(self) -> bool: ...

    def send_frames(self, frames: list[bytes]) -> None: ...


class LiveMicrophone:
    """Runs ``source`` into the session from :meth:`start` to :meth:`stop`."""

    def __init__(self, source: AudioSource, host: MicrophoneHost) -> None:
        check_source(source)
        self.source = source
        self._host = host
        self._pipeline = AudioInput(
            source.rate_hz, source.channels, format="audio/pcm", frame_ms=_FRAME_MS
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self.dropped_frames = 0

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.source.start(self._on_block)

    def stop(self) -> None:
        self._loop = None
        self.source.stop()

    def _on_block(self, block: Any) -> None:  # on the source's thread
        loop = self._loop
        if loop is None:
            return
        frames = self._pipeline.process(block)
        if frames:
            _call(loop, self._deliver, frames)

    def _deliver(self, frames: list[bytes]) -> None:  # on the event loop
        if self._loop is None or not self._host.accepts_audio():
            self.dropped_frames += len(frames)
            return
        self._host.send_frames(frames)


def _call(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed: the session is gone
        loop.call_soon_threadsafe(fn, *args)
