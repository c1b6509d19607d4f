"""The phone side of an emulated SIP call: the caller (a WAV, or a script of speech, pauses and
DTMF keys) played into the call's input, and what the agent says as the phone hears it.

In a hosted SIP call the caller's audio never crosses the application's websocket: the service
puts it into the session's input audio buffer itself, and the agent's audio goes to the phone.
:class:`PhoneLine` does the same on the local server: the caller's audio enters the connection
as ``input_audio_buffer.append`` frames (server VAD and every input rule apply to it), a key
press becomes ``input_audio_buffer.dtmf_event_received`` on the websocket, and
``response.output_audio.delta`` events are taken off the websocket and played into the phone:
converted to G.711 µ-law at 8 kHz and back (through the Rust core), as a handset hears it.

Not emulated: the RTP timing of the phone network (packet loss, jitter), and the silences
between the agent's turns — :meth:`PhoneLine.heard` is the agent's audio in the order it was
sent, back to back.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from voxwire.audio import Resampler, g711, read_wav, write_wav
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import (
    InputAudioBufferDtmfEventReceived,
    ResponseOutputAudioDelta,
    ServerEvent,
    SessionCreated,
)
from voxwire.server.connection import RealtimeConnection
from voxwire.server.core.config import input_format, output_format

__all__ = ["PHONE_RATE_HZ", "Caller", "CallerSink", "Pause", "PhoneLine", "Press", "Speak"]

PHONE_RATE_HZ: Final = 8000
_DIGITS: Final = re.compile(r"^[0-9*#A-D]+$")


@dataclass(frozen=True)
class Speak:
    """Speech of the caller: mono PCM16 at ``rate_hz``."""

    pcm: npt.NDArray[np.int16]
    rate_hz: int

    @classmethod
    def from_wav(cls, path: str | Path) -> Speak:
        audio = read_wav(path)
        return cls(audio.pcm, audio.rate_hz)


@dataclass(frozen=True)
class Pause:
    """``ms`` of line silence (the phone sends silence, not nothing)."""

    ms: int


@dataclass(frozen=True)
class Press:
    """DTMF keys (``0-9``, ``*``, ``#``, ``A-D``), one every ``interval_ms`` (silence between)."""

    digits: str
    interval_ms: int = 200

    def __post_init__(self) -> None:
        if not isinstance(self.digits, str) or not _DIGITS.match(self.digits):
            raise ConfigurationError(
                f"Press({self.digits!r}) is invalid: DTMF keys are 0-9, *, #, A, B, C, D"
            )


CallerStep = Speak | Pause | Press


@dataclass(frozen=True)
class Caller:
    """What the caller does, in order. ``pace``: multiple of real time (1.0: as a phone; 0: as
    fast as the server takes it); the audio goes in ``frame_ms`` frames."""

    steps: tuple[CallerStep, ...] = ()
    pace: float = 1.0
    frame_ms: int = 20

    def __post_init__(self) -> None:
        if self.pace < 0 or not 10 <= self.frame_ms <= 1000:
            raise ConfigurationError(
                f"Caller(pace={self.pace}, frame_ms={self.frame_ms}) is invalid: expected "
                "pace >= 0 and frame_ms from 10 to 1000"
            )
        object.__setattr__(self, "steps", tuple(self.steps))

    @classmethod
    def from_wav(cls, path: str | Path, *, pace: float = 1.0) -> Caller:
        return cls((Speak.from_wav(path),), pace=pace)


class CallerSink(Protocol):
    """Where the caller goes: the session's input (a Realtime connection, a Live call's)."""

    def input_format(self) -> tuple[str, int]:
        """The input audio's type (``audio/pcm``, ``audio/pcmu``…) and rate now."""
        ...

    async def caller_audio(self, frame: bytes) -> None:
        """One frame of the caller's audio, in :meth:`input_format`."""
        ...

    async def caller_key(self, digit: str) -> None:
        """The caller pressed ``digit``."""
        ...


@dataclass
class _RealtimeSink:
    """A Realtime connection's input: audio as ``input_audio_buffer.append`` frames, keys as
    ``input_audio_buffer.dtmf_event_received`` events."""

    line: PhoneLine
    connection: RealtimeConnection

    def input_format(self) -> tuple[str, int]:
        fmt = input_format(self.connection.session.session)
        return fmt.type, fmt.sample_format.sample_rate_hz

    async def caller_audio(self, frame: bytes) -> None:
        audio = base64.b64encode(frame).decode()
        await self.connection.feed(
            json.dumps({"type": "input_audio_buffer.append", "audio": audio})
        )

    async def caller_key(self, digit: str) -> None:
        event = InputAudioBufferDtmfEventReceived(event=digit, received_at=int(time.time()))
        self.line.dtmf_sent.append(event)
        await self.connection.send_events([event])


@dataclass
class PhoneLine:
    """One call's phone: feeds the caller into ``connection`` and records the agent."""

    caller: Caller
    _heard: list[npt.NDArray[np.int16]] = field(default_factory=list)
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _to_phone: Resampler | None = None
    _from_rate_hz: int = 0
    dtmf_sent: list[InputAudioBufferDtmfEventReceived] = field(default_factory=list)
    connection: RealtimeConnection | None = None
    keys_heard: list[str] = field(default_factory=list)  # DTMF the agent sent to the phone
    #: When each part of the agent's audio reached the phone (``time.monotonic()``) and its
    #: samples at 8 kHz: the caller's side of a gap (a worker failing over) is measured on it.
    heard_at: list[tuple[float, int]] = field(default_factory=list)

    # --- what the agent says --------------------------------------------------------------------

    def outbound(self, events: Sequence[ServerEvent]) -> Sequence[ServerEvent]:
        """The connection's outbound filter: audio deltas go to the phone, the rest on."""
        kept: list[ServerEvent] = []
        for event in events:
            if isinstance(event, ResponseOutputAudioDelta):
                self._play(event.delta)
                continue
            if isinstance(event, SessionCreated):
                self._ready.set()
            kept.append(event)
        return kept

    def _play(self, audio: bytes) -> None:
        assert self.connection is not None
        self.play_agent(audio, output_format(self.connection.session.session).type)

    def ready(self) -> None:
        """The session is up: the caller may start (``session.created`` / ``started`` sent)."""
        self._ready.set()

    def play_agent(self, audio: bytes, audio_type: str) -> None:
        """The agent's audio (``audio_type``: G.711 at 8 kHz, else PCM16 at 24 kHz) into the
        phone."""
        if audio_type == "audio/pcmu":
            pcm, rate_hz = g711.ulaw_decode(audio), PHONE_RATE_HZ
        elif audio_type == "audio/pcma":
            pcm, rate_hz = g711.alaw_decode(audio), PHONE_RATE_HZ
        else:
            pcm, rate_hz = np.frombuffer(audio, dtype="<i2").astype(np.int16), 24_000
        if rate_hz != PHONE_RATE_HZ:
            if self._to_phone is None or self._from_rate_hz != rate_hz:
                self._to_phone, self._from_rate_hz = Resampler(rate_hz, PHONE_RATE_HZ), rate_hz
            pcm = self._to_phone.process(pcm)
        # The phone network carries µ-law: what the handset plays went through it.
        self._heard.append(g711.ulaw_decode(g711.ulaw_encode(pcm)))
        self.heard_at.append((time.monotonic(), len(pcm)))

    def heard(self) -> npt.NDArray[np.int16]:
        """The agent's audio as the phone played it: PCM16 at 8 kHz."""
        return np.concatenate(self._heard) if self._heard else np.zeros(0, np.int16)

    def write_heard(self, path: str | Path) -> None:
        write_wav(path, self.heard(), PHONE_RATE_HZ)

    # --- what the caller does -------------------------------------------------------------------

    async def play_caller(self, connection: RealtimeConnection) -> None:
        """Play the caller's steps into ``connection`` once its ``session.created`` is out."""
        await self.play_into(_RealtimeSink(self, connection))

    async def play_into(self, sink: CallerSink) -> None:
        """Play the caller's steps into ``sink`` once the session is up (:meth:`ready`)."""
        await self._ready.wait()
        loop = asyncio.get_running_loop()
        start, sent_ms = loop.time(), 0.0
        for step in self.caller.steps:
            if isinstance(step, Press):
                for digit in step.digits:
                    await sink.caller_key(digit)
                    sent_ms = await self._silence(sink, step.interval_ms, start, sent_ms)
                continue
            if isinstance(step, Pause):
                sent_ms = await self._silence(sink, step.ms, start, sent_ms)
                continue
            for frame in self._frames(sink, step):
                await sink.caller_audio(frame)
                sent_ms += self.caller.frame_ms
                await self._keep_pace(start, sent_ms)

    async def _silence(self, sink: CallerSink, ms: int, start: float, sent_ms: float) -> float:
        frame_ms = self.caller.frame_ms
        rate_hz = 24_000
        quiet = Speak(np.zeros(rate_hz * frame_ms // 1000, np.int16), rate_hz)
        for _ in range(max(0, ms) // frame_ms):
            for frame in self._frames(sink, quiet):
                await sink.caller_audio(frame)
            sent_ms += frame_ms
            await self._keep_pace(start, sent_ms)
        return sent_ms

    def _frames(self, sink: CallerSink, speech: Speak) -> list[bytes]:
        """``speech`` in the session's input format, cut into frames."""
        audio_type, rate_hz = sink.input_format()
        pcm = speech.pcm
        if speech.rate_hz != rate_hz:
            resampler = Resampler(speech.rate_hz, rate_hz)
            pcm = np.concatenate([resampler.process(pcm), resampler.flush()])
        per_frame = rate_hz * self.caller.frame_ms // 1000
        frames = [pcm[i : i + per_frame] for i in range(0, len(pcm), per_frame)]
        if audio_type == "audio/pcmu":
            return [g711.ulaw_encode(f) for f in frames]
        if audio_type == "audio/pcma":
            return [g711.alaw_encode(f) for f in frames]
        return [f.astype("<i2").tobytes() for f in frames]

    async def _keep_pace(self, start: float, sent_ms: float) -> None:
        if self.caller.pace == 0:
            await asyncio.sleep(0)
            return
        due = start + sent_ms / 1000.0 / self.caller.pace
        await asyncio.sleep(max(0.0, due - asyncio.get_running_loop().time()))
