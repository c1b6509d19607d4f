"""Twilio's side of a call, for tests: a caller and a phone line against a bridge's media stream.

:class:`TwilioCallSimulator` opens the websocket as Twilio does for ``<Connect><Stream>`` and
speaks the messages of Twilio's "Media Streams - WebSocket Messages" page
(https://www.twilio.com/docs/voice/media-streams/websocket-messages): ``connected``
(``protocol``, ``version``), ``start`` (``sequenceNumber``, ``streamSid``, ``start.accountSid``,
``.callSid``, ``.tracks``, ``.customParameters``, ``.mediaFormat``), one ``media`` message of
20 ms per tick (``media.track`` ``inbound``, ``.chunk``, ``.timestamp``, ``.payload``), ``dtmf``
(``dtmf.track``, ``.digit``), ``mark`` sent back, and ``stop`` (``stop.accountSid``,
``.callSid``).

The phone line: ``media`` the bridge sends is queued and becomes playable ``carrier_buffer_ms``
after it arrived (the carrier's jitter buffer: the caller hears it that much later); every
tick plays 20 ms of what is playable (silence otherwise) into :attr:`heard`. A ``mark`` is
sent back once all audio queued before it has played, as Twilio does; a ``clear`` drops what is
queued and sends every pending mark back at once ("This empties all buffered audio and causes
any mark messages to be sent back").

Pace: ``realtime=True`` ticks every 20 ms of wall-clock time. Otherwise time is virtual: ticks
run as fast as the bridge keeps up while there is something to say or to play, and at real-time
pace while the line is idle (the server is thinking). After every virtual tick the simulator
waits for a websocket pong from the bridge, so everything it sent (marks included) has reached
the bridge before the line plays on.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from voxwire.audio import Resampler, g711, read_wav, write_wav
from voxwire.exceptions import ConfigurationError, InvalidState

__all__ = ["LineClear", "TwilioCallSimulator"]

RATE_HZ = 8_000
TICK_SAMPLES = 160  # 20 ms, Twilio's media frame
_SILENCE = g711.ulaw_encode(np.zeros(TICK_SAMPLES, dtype=np.int16))


@dataclass(frozen=True)
class LineClear:
    """A ``clear`` as the line saw it: the caller had heard ``at_sample`` samples (silence
    included) when it came; ``dropped_samples`` were queued and never played."""

    at_sample: int
    dropped_samples: int
    marks_returned: int


@dataclass
class _Audio:
    playable_at: int  # line sample position from which it may play
    pcm: npt.NDArray[np.int16]
    offset: int = 0


class TwilioCallSimulator:
    """One simulated call (an async context manager: connects, sends ``connected`` and
    ``start``; on exit sends ``stop`` and closes)."""

    def __init__(
        self,
        url: str,
        *,
        carrier_buffer_ms: int = 0,
        realtime: bool = False,
        stream_sid: str = "MZ00000000000000000000000000000001",
        call_sid: str = "CA00000000000000000000000000000001",
        account_sid: str = "AC00000000000000000000000000000001",
        custom_parameters: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        if not isinstance(carrier_buffer_ms, int) or not 0 <= carrier_buffer_ms <= 10_000:
            raise ConfigurationError(
                f"carrier_buffer_ms={carrier_buffer_ms!r}: expected an integer 0 ..= 10000"
            )
        self.url = url
        self.carrier_buffer_samples = carrier_buffer_ms * RATE_HZ // 1000
        self.realtime = realtime
        self.stream_sid, self.call_sid, self.account_sid = stream_sid, call_sid, account_sid
        self.custom_parameters = dict(custom_parameters or {})
        self._headers = headers
        self._ws: ClientConnection | None = None
        self._receiver: asyncio.Task[None] | None = None
        self._line: deque[_Audio | str] = deque()  # audio, or a mark name
        self._heard: list[npt.NDArray[np.int16]] = []
        self._agent: list[npt.NDArray[np.int16]] = []
        self.heard_samples = 0
        """Line position: samples the caller has heard so far (silence included)."""
        self.agent_samples_heard = 0
        """Samples of the bridge's audio the caller heard (not silence)."""
        self.clears: list[LineClear] = []
        self.received: list[tuple[str, int, int]] = []
        """``(event, line position, samples)`` of every message from the bridge, in order
        (``samples``: the audio a ``media`` message carried, 0 for the others)."""
        self.marks_returned = 0
        self.bad_messages: list[str] = []
        """Messages from the bridge that are not Twilio messages (malformed), with why."""
        self.closed_by_bridge: str | None = None
        """Why the bridge closed the stream (its close reason), once it did."""
        self._sequence = 0
        self._chunk = 0
        self._started = 0.0

    # -- the call ---------------------------------------------------------------------------

    async def __aenter__(self) -> TwilioCallSimulator:
        self._ws = await connect(self.url, additional_headers=self._headers, max_size=2**20)
        self._receiver = asyncio.create_task(self._receive(), name="voxwire-twilio-sim")
        await self._send({"event": "connected", "protocol": "Call", "version": "1.0.0"})
        start = {
            "streamSid": self.stream_sid,
            "accountSid": self.account_sid,
            "callSid": self.call_sid,
            "tracks": ["inbound"],
            "customParameters": self.custom_parameters,
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": RATE_HZ, "channels": 1},
        }
        await self._send({"event": "start", "start": start}, numbered=True)
        self._started = time.monotonic()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.hang_up()

    async def hang_up(self) -> None:
        """Send ``stop`` and close (idempotent)."""
        ws, self._ws = self._ws, None
        if ws is None:
            return
        try:
            stop = {"accountSid": self.account_sid, "callSid": self.call_sid}
            await ws.send(self._encode({"event": "stop", "stop": stop}, numbered=True))
        except ConnectionClosed:
            pass
        await ws.close()
        if self._receiver is not None:
            await asyncio.wait([self._receiver])

    async def say(self, pcm: npt.NDArray[np.int16], rate_hz: int) -> None:
        """The caller speaks ``pcm`` (mono int16 at ``rate_hz``), one 20 ms frame per tick
        while the line plays on."""
        if rate_hz != RATE_HZ:
            resampler = Resampler(rate_hz, RATE_HZ)
            pcm = np.concatenate([resampler.process(pcm), resampler.flush()])
        ulaw = g711.ulaw_encode(pcm)
        for start in range(0, len(ulaw), TICK_SAMPLES):
            frame = ulaw[start : start + TICK_SAMPLES]
            await self.tick(frame + _SILENCE[len(frame) :])

    async def say_wav(self, path: str | Path) -> None:
        """The caller speaks a mono 16-bit WAV file."""
        audio = read_wav(path)
        await self.say(audio.pcm, audio.rate_hz)

    async def press(self, digit: str) -> None:
        """The caller presses a key (a ``dtmf`` message)."""
        dtmf = {"track": "inbound_track", "digit": digit}
        await self._send({"event": "dtmf", "dtmf": dtmf}, numbered=True)

    async def listen(self, ms: int) -> None:
        """The caller stays silent for ``ms`` of line time."""
        for _ in range(max(1, ms * RATE_HZ // 1000 // TICK_SAMPLES)):
            await self.tick()

    async def until(self, condition: Callable[[], bool], *, timeout_s: float = 30.0) -> None:
        """The caller stays silent until ``condition()``; fails after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            if self.closed_by_bridge is not None:
                raise InvalidState(f"the bridge closed the stream: {self.closed_by_bridge!r}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the simulated call waited {timeout_s} s in vain")
            await self.tick()

    @property
    def line_idle(self) -> bool:
        """Nothing queued on the line (the bridge has nothing in flight to the caller)."""
        return not self._line

    @property
    def heard(self) -> npt.NDArray[np.int16]:
        """What the caller heard, 8 kHz PCM16, silence included."""
        return np.concatenate(self._heard) if self._heard else np.zeros(0, np.int16)

    @property
    def agent_heard(self) -> npt.NDArray[np.int16]:
        """The bridge's audio as the caller heard it, without the line's silences."""
        return np.concatenate(self._agent) if self._agent else np.zeros(0, np.int16)

    def write_heard(self, path: str | Path) -> None:
        """Write :attr:`heard` to a WAV file."""
        write_wav(path, self.heard, RATE_HZ)

    # -- one tick: 20 ms of the caller's voice out, 20 ms of the line played ---------------

    async def tick(self, frame: bytes = _SILENCE) -> None:
        """Send one 20 ms frame of the caller and play 20 ms of the line."""
        if self._ws is None:
            raise InvalidState("the simulated call is not connected (use it as a context manager)")
        self._chunk += 1
        media = {
            "track": "inbound",
            "chunk": str(self._chunk),
            "timestamp": str((self._chunk - 1) * 20),
            "payload": base64.b64encode(frame).decode("ascii"),
        }
        await self._send({"event": "media", "media": media}, numbered=True)
        idle = not self._line
        for name in self._play():
            await self._return_mark(name)
        if self.realtime:
            due = self._started + self.heard_samples / RATE_HZ
            await asyncio.sleep(max(0.0, due - time.monotonic()))
        elif idle and frame is _SILENCE:
            await asyncio.sleep(TICK_SAMPLES / RATE_HZ)  # nothing to say or hear: real time
        else:
            await self._barrier()

    def _play(self) -> list[str]:
        """Play one tick of the line; returns the marks whose audio has now all played."""
        out = np.zeros(TICK_SAMPLES, dtype=np.int16)
        filled, now = 0, self.heard_samples
        marks: list[str] = []
        while self._line:
            head = self._line[0]
            if isinstance(head, str):
                marks.append(head)
                self._line.popleft()
                continue
            if filled == TICK_SAMPLES or head.playable_at > now + filled:
                break
            n = min(TICK_SAMPLES - filled, len(head.pcm) - head.offset)
            out[filled : filled + n] = head.pcm[head.offset : head.offset + n]
            filled += n
            head.offset += n
            if head.offset == len(head.pcm):
                self._line.popleft()
        self._heard.append(out)
        if filled:
            self._agent.append(out[:filled])
        self.heard_samples += TICK_SAMPLES
        self.agent_samples_heard += filled
        return marks

    async def _barrier(self) -> None:
        ws = self._ws
        if ws is None:
            return
        with contextlib.suppress(ConnectionClosed):
            await asyncio.wait_for(await ws.ping(), 10.0)

    # -- the bridge's messages --------------------------------------------------------------

    async def _receive(self) -> None:
        ws = self._ws
        assert ws is not None
        with contextlib.suppress(ConnectionClosed):
            async for message in ws:
                try:
                    marks = self._received(msgspec.json.decode(message))
                except (msgspec.DecodeError, KeyError, TypeError, AttributeError, ValueError) as e:
                    # Twilio would ignore it; the test can look at what the bridge got wrong
                    self.bad_messages.append(f"{type(e).__name__}: {e}: {str(message)[:200]}")
                    continue
                for name in marks:
                    await self._return_mark(name)
        if self._ws is not None:  # not our hang-up: the bridge closed the stream
            self.closed_by_bridge = ws.close_reason or "closed"

    def _received(self, message: dict[str, Any]) -> list[str]:
        """Note one message; returns the marks to send back now (those a clear dropped)."""
        event = message.get("event")
        if event == "media":
            pcm = g711.ulaw_decode(base64.b64decode(message["media"]["payload"]))
            self.received.append(("media", self.heard_samples, len(pcm)))
            self._line.append(_Audio(self.heard_samples + self.carrier_buffer_samples, pcm))
            return []
        self.received.append((str(event), self.heard_samples, 0))
        if event == "mark":
            self._line.append(message["mark"]["name"])
        elif event == "clear":
            dropped = sum(len(a.pcm) - a.offset for a in self._line if isinstance(a, _Audio))
            marks = [name for name in self._line if isinstance(name, str)]
            self._line.clear()
            self.clears.append(LineClear(self.heard_samples, dropped, len(marks)))
            return marks  # sent back at once, their audio never played
        return []

    async def _return_mark(self, name: str) -> None:
        self.marks_returned += 1
        with contextlib.suppress(ConnectionClosed, InvalidState):
            await self._send({"event": "mark", "mark": {"name": name}}, numbered=True)

    def _encode(self, message: dict[str, Any], *, numbered: bool = False) -> str:
        if numbered:
            self._sequence += 1
            message = {**message, "sequenceNumber": str(self._sequence)}
            message["streamSid"] = self.stream_sid
        return msgspec.json.encode(message).decode()

    async def _send(self, message: dict[str, Any], *, numbered: bool = False) -> None:
        if self._ws is None:
            raise InvalidState("the simulated call is not connected")
        try:
            await self._ws.send(self._encode(message, numbered=numbered))
        except ConnectionClosed as closed:  # the bridge hung up: the line goes on, silent
            self.closed_by_bridge = closed.rcvd.reason if closed.rcvd else "closed"
