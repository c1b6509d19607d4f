"""The session's microphone: an audio source run into ``send_audio``, with local barge-in.

``RealtimeSession(audio_input=source)`` takes any source that delivers blocks of PCM on its own
thread — :class:`~voxwire.audio.SoundDeviceInput` (a microphone),
:class:`~voxwire.audio.WavFileInput` / :class:`~voxwire.audio.MemoryInput` (files and tests),
or anything with ``rate_hz``, ``channels``, ``start(callback)`` and ``stop()``
(:class:`AudioSource`). The session starts it once connected and stops it when it closes.

Each block goes, on the source's thread, through an :class:`~voxwire.audio.AudioInput`: mixed
down, resampled by the Rust core to the session's input format (24 kHz PCM16, or 8 kHz G.711
encoded by the core for ``audio/pcmu`` / ``audio/pcma``) and cut into frames of
``input_frame_ms``. The frames cross to the event loop once per block
(``loop.call_soon_threadsafe``) and go into the protocol core like ``send_audio``'s: dropped
while muted (counted) or while the session reconnects. The input format is the one the session
asked for last (an update in flight counts: frames never go out in the old format after an
update that changed it); when it changes, the pipeline is rebuilt.

Local barge-in (``local_barge_in=True``, or a :class:`~voxwire.audio.BargeInDetector` of one's
own): webrtcvad judges every frame on the source's thread; when the user starts speaking while
the agent's audio plays or a response is in progress, the session interrupts at once
(``session.interrupt()``: playback stops, each item is truncated at what was heard, the
response is cancelled) instead of waiting for the server's ``speech_started`` a network round
trip later. The echo gate is on while assistant audio plays. Trade-offs: docs/audio-io.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

import voxwire.asyncio.events as ev
from voxwire.asyncio.errors import SessionClosed
from voxwire.audio._pcm import format_rate_hz
from voxwire.audio.bargein import BargeInDetector
from voxwire.audio.echo import EchoCancelledInput
from voxwire.audio.input import AudioInput
from voxwire.exceptions import ConfigurationError
from voxwire.protocol.config import AudioConfig, AudioFormat, AudioInputConfig, SessionConfig
from voxwire.protocol.protocol import RealtimeProtocol

__all__ = ["AudioSource", "Microphone", "input_format"]

log = logging.getLogger("voxwire.session")


class AudioSource(Protocol):
    """What ``audio_input=`` takes: blocks of PCM (int16 or float32, ``(frames, channels)`` or
    interleaved) at ``rate_hz`` with ``channels``, delivered to ``callback`` on the source's own
    thread from ``start`` until ``stop``."""

    @property
    def rate_hz(self) -> int: ...

    @property
    def channels(self) -> int: ...

    def start(self, callback: Callable[[Any], None]) -> None: ...

    def stop(self) -> None: ...


def check_source(source: object) -> None:
    """A clear error at construction for something that is not an audio source."""
    missing = [
        name for name in ("rate_hz", "channels", "start", "stop") if not hasattr(source, name)
    ]
    if missing:
        raise ConfigurationError(
            f"audio_input={source!r} is invalid: it has no {', '.join(missing)}; expected an "
            "audio source such as voxwire.audio.SoundDeviceInput, WavFileInput or MemoryInput"
        )


def _format_of(config: SessionConfig | None) -> str | None:
    if (
        config is not None
        and isinstance(config.audio, AudioConfig)
        and isinstance(config.audio.input, AudioInputConfig)
        and isinstance(config.audio.input.format, AudioFormat)
    ):
        return config.audio.input.format.type
    return None


def input_format(protocol: RealtimeProtocol) -> str:
    """The input format the session asked for last: the newest update in flight that sets one,
    else the server's acknowledged session, else ``audio/pcm``."""
    for record in reversed(protocol.updates_in_flight):
        asked = _format_of(record.config)
        if asked is not None:
            return asked
    return _format_of(protocol.session) or "audio/pcm"


class MicrophoneHost(Protocol):
    """The session as the microphone sees it (asyncio/hosts.py)."""

    def accepts_audio(self) -> bool: ...

    def send_frames(self, frames: list[bytes]) -> None: ...

    def protocol(self) -> RealtimeProtocol: ...

    def agent_audible(self) -> bool: ...

    def barge_in(self) -> None: ...

    async def flush(self) -> None: ...

    def emit(self, event: ev.SessionEvent) -> None: ...


class Microphone:
    """Runs one audio source into one session (see the module docstring)."""

    def __init__(
        self,
        source: AudioSource,
        host: MicrophoneHost,
        *,
        frame_ms: int,
        barge_in: bool | BargeInDetector,
    ) -> None:
        self.source = source
        self._host = host
        self._frame_ms = frame_ms
        self._barge_in = barge_in
        self._pipeline: AudioInput | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._flushing: asyncio.Task[None] | None = None
        self._more = False
        self._failed = threading.Event()
        self._started = False
        self.barge_ins = 0
        """Interruptions the local detector made."""

    @property
    def pipeline(self) -> AudioInput | None:
        """The current input pipeline (its counters: ``frames_sent``; rebuilt when the session's
        input format changes)."""
        return self._pipeline

    def start(self) -> None:
        """Build the pipeline for the session's input format and start the source (on the
        event loop, once connected)."""
        self._loop = asyncio.get_running_loop()
        self._pipeline = self._build(input_format(self._host.protocol()))
        self._started = True
        self.source.start(self._on_block)

    def stop(self) -> None:
        """Stop the source (idempotent); frames still crossing to the loop are dropped."""
        if self._started:
            self._started = False
            try:
                self.source.stop()
            except Exception:  # a broken device: nothing more to release
                log.debug("stopping the audio input failed", exc_info=True)
        if self._flushing is not None:
            self._flushing.cancel()

    def _build(self, format: str) -> AudioInput:
        detector = self._detector_for(format)
        return AudioInput(
            self.source.rate_hz,
            self.source.channels,
            format=format,
            frame_ms=self._frame_ms,
            barge_in=detector,
        )

    def _detector_for(self, format: str) -> BargeInDetector | None:
        if self._barge_in is False:
            return None
        rate = format_rate_hz(format)
        if isinstance(self._barge_in, BargeInDetector):
            if self._barge_in.rate_hz != rate:
                raise ConfigurationError(
                    f"local_barge_in's detector runs at {self._barge_in.rate_hz} Hz but the "
                    f"session's input format {format} is {rate} Hz: make it with "
                    f"BargeInDetector(rate_hz={rate}), or pass local_barge_in=True"
                )
            return self._barge_in
        if isinstance(self.source, EchoCancelledInput):  # the agent's echo is gone
            # The level rule, not the residual-echo gate (behind_echo_canceller(rate,
            # canceller)): on held-out rooms the gate heard twice the real barge-ins but made
            # twice the false ones (benches/RESULTS.md, "Barge-in behind the canceller over
            # unseen rooms"); an agent cutting itself off is the worse failure.
            return BargeInDetector.behind_echo_canceller(rate)
        return BargeInDetector(rate)

    # --- on the source's thread -------------------------------------------------------------------

    def _on_block(self, block: Any) -> None:
        pipeline, loop = self._pipeline, self._loop
        if pipeline is None or loop is None or self._failed.is_set():
            return
        detector = pipeline.barge_in
        try:
            triggers = detector.triggers if detector is not None else 0
            frames = pipeline.process(block)
            started = detector is not None and detector.triggers > triggers
        except Exception as exc:
            self._failed.set()
            self._call(loop, self._source_failed, exc)
            return
        if frames or started:
            self._call(loop, self._deliver, pipeline, frames, started)

    @staticmethod
    def _call(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the session is gone
            loop.call_soon_threadsafe(fn, *args)

    # --- on the event loop ------------------------------------------------------------------------

    def _deliver(self, pipeline: AudioInput, frames: list[bytes], started: bool) -> None:
        if not self._started:
            return
        host = self._host
        detector = pipeline.barge_in
        if detector is not None:
            detector.agent_speaking = host.agent_audible()
        if started and host.accepts_audio():
            self.barge_ins += 1
            host.barge_in()
        wanted = input_format(host.protocol())
        if wanted != pipeline.format:
            # Frames made in the old format are dropped; the next block uses the new one.
            frames = []
            try:
                self._pipeline = self._build(wanted)
            except ConfigurationError as exc:
                self._failed.set()
                self._source_failed(exc)
        if frames and host.accepts_audio():
            host.send_frames(frames)
        # One flushing task at a time; frames queued while it sends go out in its next round.
        self._more = True
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.get_running_loop().create_task(
                self._flush(), name="voxwire-audio-input-flush"
            )

    async def _flush(self) -> None:
        try:
            while self._more:
                self._more = False
                await self._host.flush()
        except SessionClosed:  # the connection is gone: the receive loop says so
            pass

    def _source_failed(self, exc: BaseException) -> None:
        log.error("the audio input failed", exc_info=exc)
        self._host.emit(ev.failure("the audio input", exc, "audio_input"))
