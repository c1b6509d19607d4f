"""The Twilio Media Streams bridge: one bidirectional stream (``<Connect><Stream>``) in, one
:class:`~voxwire.asyncio.RealtimeSession` per call.

Per call, three tasks share one :class:`~.stream.TwilioStream` (the sans-I/O core) and one
:class:`~voxwire.audio.RemoteOutput` (the session's ``audio_output``):

* the **reader**: Twilio's messages into the core; the caller's µ-law goes to
  ``session.send_audio`` as it is (the session's input format is ``audio/pcmu``: no
  resampling), a returned mark acknowledges the output up to the ring position it ends at,
  ``dtmf`` goes to ``on_dtmf``, ``stop`` ends the call;
* the **sender**: whenever the session queued assistant audio (``audio/pcmu`` too), it takes
  whole chunks of ``chunk_ms`` from the output and sends each as a ``media`` message followed by
  a ``mark``. When the session interrupts (server VAD heard the caller, ``session.interrupt()``)
  the output drops what was not sent and the core queues a ``clear`` before anything else, so
  Twilio drops what it buffered; the session truncates each item at what the marks say was
  played;
* the **events** loop: the session's events to ``on_event`` (the application's view of the
  call), until the session closes.

The playback clock moves only when a mark comes back, so a truncation never counts audio the
caller did not hear; it may count less, by what played since the last mark came back: up to
one chunk, plus the time the mark and the ``clear`` spend on the wire (docs/telephony.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias

from websockets.exceptions import ConnectionClosed

from voxwire.agents import RealtimeAgent
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio import events as ev
from voxwire.audio import RemoteOutput, g711
from voxwire.exceptions import ConfigurationError, InvalidState
from voxwire.telephony.twilio import messages as m
from voxwire.telephony.twilio.stream import Played, TwilioStream

__all__ = ["CallInfo", "CallReport", "MediaSocket", "TwilioBridge", "phone_config"]

logger = logging.getLogger("voxwire.telephony.twilio")

RATE_HZ = 8_000


class MediaSocket(Protocol):
    """The websocket Twilio opened (``websockets``' server connection is one): text messages
    in and out; ``recv`` raises :class:`~websockets.exceptions.ConnectionClosed` at the end."""

    async def recv(self) -> str | bytes: ...

    async def send(self, message: str) -> None: ...

    async def close(self, code: int = 1000, reason: str = "") -> None: ...


@dataclass(frozen=True)
class CallInfo:
    """Who is calling, from the stream's ``start`` message."""

    stream_sid: str
    call_sid: str
    account_sid: str
    custom_parameters: dict[str, str]


@dataclass
class CallReport:
    """What happened on one call (returned by :meth:`TwilioBridge.handle`)."""

    call: CallInfo | None = None
    caller_frames: int = 0
    chunks_sent: int = 0
    marks_played: int = 0
    clears_sent: int = 0
    cleared_marks_returned: int = 0
    dtmf: list[str] = field(default_factory=list)
    stream_errors: list[str] = field(default_factory=list)
    ended_by: str = ""
    """``stop`` (Twilio ended the stream), ``disconnected``, ``session`` (the session closed),
    ``no_start`` (no ``start`` in time), ``refused`` (not authorized), ``failed`` (the session
    could not run: see ``error``) or ``cancelled``."""
    error: str | None = None
    """Why the session failed (``ended_by == "failed"``), e.g. the endpoint refused it."""
    duration_s: float = 0.0

    def summary(self) -> str:
        """The call in one line, e.g. ``call CA12 ended (stop) after 42.0 s: 2100 caller
        frames, 310 chunks sent, 305 played, 1 clear, keys 1#``."""
        who = self.call.call_sid if self.call else "(no start)"
        line = (
            f"call {who} ended ({self.ended_by}) after {self.duration_s:.1f} s: "
            f"{self.caller_frames} caller frames, {self.chunks_sent} chunks sent, "
            f"{self.marks_played} played, {self.clears_sent} clear"
            + ("" if self.clears_sent == 1 else "s")
        )
        if self.dtmf:
            line += f", keys {''.join(self.dtmf)}"
        if self.error:
            line += f"; {self.error}"
        return line


EventHandler: TypeAlias = Callable[[CallInfo, RealtimeSession, ev.SessionEvent], Awaitable[None]]
DtmfHandler: TypeAlias = Callable[[CallInfo, RealtimeSession, str], Awaitable[None]]


def phone_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """``config`` (a ``session.update`` session as a mapping) with µ-law 8 kHz in and out, the
    phone's own format (Realtime ``audio/pcmu``)."""
    if config is not None and not isinstance(config, Mapping):
        raise ConfigurationError(
            f"config={config!r}: the phone bridge takes the session configuration as a mapping"
        )
    merged: dict[str, Any] = copy.deepcopy(dict(config or {}))
    audio = merged.setdefault("audio", {})
    for side in ("input", "output"):
        audio.setdefault(side, {})["format"] = {"type": "audio/pcmu"}
    return merged


class TwilioBridge:
    """Runs ``agent`` on every Twilio Media Stream given to :meth:`handle`.

    ``url`` / ``model`` / ``api_key``: the Realtime endpoint (the hosted service by default; the
    local server's URL offline). ``config``: session configuration (turn detection, voice ...);
    the audio formats are set to ``audio/pcmu``. ``chunk_ms``: audio per ``media`` message, each
    followed by a mark — the bound on how far a truncation may fall short of what the caller
    heard (20 ..= 1000). ``greeting``: the agent speaks first, before the caller says
    anything — ``True``: a response as its instructions say (``session.create_response()``); a
    string: these words (``session.say(text)``); ``False`` (default): it waits for the caller.
    ``on_event(call, session, event)``: every session event of a call.
    ``on_dtmf(call, session, digit)``: a key the caller pressed. ``session_options``: more
    :class:`~voxwire.asyncio.RealtimeSession` arguments (``store``, ``metadata`` ...).
    """

    def __init__(
        self,
        agent: RealtimeAgent | None = None,
        *,
        url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        config: Mapping[str, Any] | None = None,
        chunk_ms: int = 40,
        greeting: bool | str = False,
        input_batch_ms: int = 20,
        start_timeout_s: float = 10.0,
        on_event: EventHandler | None = None,
        on_dtmf: DtmfHandler | None = None,
        session_options: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(chunk_ms, int) or not 20 <= chunk_ms <= 1000:
            raise ConfigurationError(f"chunk_ms={chunk_ms!r}: expected an integer 20 ..= 1000")
        if not isinstance(greeting, (bool, str)) or greeting == "":
            raise ConfigurationError(
                f"greeting={greeting!r}: expected True (the agent greets as its instructions "
                "say), the words to say, or False"
            )
        self.greeting = greeting
        self.agent = agent
        self.config = phone_config(config)
        self.chunk_ms = chunk_ms
        self.chunk_samples = chunk_ms * RATE_HZ // 1000
        if not isinstance(input_batch_ms, int) or not 20 <= input_batch_ms <= 200:
            raise ConfigurationError(
                f"input_batch_ms={input_batch_ms!r}: expected an integer 20 ..= 200"
            )
        self.input_batch_samples = input_batch_ms * RATE_HZ // 1000
        self.start_timeout_s = start_timeout_s
        self._endpoint: dict[str, Any] = {"url": url, "model": model, "api_key": api_key}
        self._options = dict(session_options or {})
        self.on_event = on_event
        self.on_dtmf = on_dtmf
        self.authorize: Callable[[CallInfo], bool] | None = None
        """Decides, from the ``start`` message, whether a stream may run the agent (set by
        :class:`~.serve.PhoneServer` when it checks tokens); ``None``: every stream may."""

    async def handle(self, websocket: MediaSocket, report: CallReport | None = None) -> CallReport:
        """Bridge one stream until Twilio stops it, the socket closes or the session ends.
        ``report``: fill this one (it then holds the call also when the task is cancelled)."""
        started_at = time.monotonic()
        report = CallReport() if report is None else report
        try:
            return await self._handle(websocket, report)
        except asyncio.CancelledError:
            report.ended_by = report.ended_by or "cancelled"
            raise
        finally:
            report.duration_s = time.monotonic() - started_at

    async def _handle(self, websocket: MediaSocket, report: CallReport) -> CallReport:
        stream = TwilioStream()
        try:
            start = await asyncio.wait_for(
                _read_start(websocket, stream, report), self.start_timeout_s
            )
        except (asyncio.TimeoutError, ConnectionClosed):
            start = None
        if start is None:
            report.ended_by = report.ended_by or "no_start"
        else:
            call = report.call = CallInfo(
                start.stream_sid, start.call_sid, start.account_sid, start.custom_parameters
            )
            if self.authorize is not None and not self.authorize(call):
                report.ended_by = "refused"
                await websocket.close(1008, "this stream was not started by a signed webhook")
            else:
                await self._run(websocket, stream, call, report)
        return report

    async def _run(
        self, websocket: MediaSocket, stream: TwilioStream, call: CallInfo, report: CallReport
    ) -> None:
        try:
            await _Call(self, websocket, stream, call, report).run()
        except Exception as exc:  # the session could not open or broke: end this call only
            report.ended_by, report.error = "failed", f"{type(exc).__name__}: {exc}"
            logger.warning("call %s failed: %s", call.call_sid, report.error)
            with contextlib.suppress(ConnectionClosed):
                await websocket.close(1011, "the agent's session failed")

    def session_for(self, output: RemoteOutput) -> RealtimeSession:
        """The session of one call (its audio goes to ``output``)."""
        arguments = {**self._options, **{k: v for k, v in self._endpoint.items() if v}}
        return RealtimeSession(self.agent, config=self.config, audio_output=output, **arguments)


async def _read_start(
    websocket: MediaSocket, stream: TwilioStream, report: CallReport
) -> m.StreamStarted | None:
    while True:
        stream.receive_text(await websocket.recv())
        for event in stream.events_received():
            if isinstance(event, m.StreamStarted):
                return event
            if isinstance(event, m.StreamError):
                report.stream_errors.append(event.message)


class _Call:
    """One call's three tasks (see the module docstring)."""

    def __init__(
        self,
        bridge: TwilioBridge,
        websocket: MediaSocket,
        stream: TwilioStream,
        call: CallInfo,
        report: CallReport,
    ) -> None:
        self.bridge = bridge
        self.websocket = websocket
        self.stream = stream
        self.call = call
        self.report = report
        self.wake = asyncio.Event()
        self.inbound = bytearray()  # caller audio not yet appended (input_batch_ms)
        self.output = RemoteOutput(RATE_HZ, on_audio=self.wake.set, on_interrupt=self._clear)

    def _clear(self) -> None:
        # Called inside the session's interruption, before any later delta is pushed: the
        # clear is queued ahead of any audio sent after the cut.
        if self.stream.send_clear():
            self.report.clears_sent += 1
        self.wake.set()

    async def run(self) -> None:
        session = self.bridge.session_for(self.output)
        async with session:
            await self._greet(session)
            tasks = {
                asyncio.create_task(self._read(session), name="voxwire-twilio-reader"),
                asyncio.create_task(self._events(session), name="voxwire-twilio-events"),
            }
            sender = asyncio.create_task(self._send(), name="voxwire-twilio-sender")
            try:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    task.result()
            except asyncio.CancelledError:
                self.report.ended_by = "cancelled"
                raise
            finally:
                for task in (*tasks, sender):
                    task.cancel()
                await asyncio.wait({*tasks, sender})
        self.report.cleared_marks_returned = self.stream.cleared_marks_returned
        with contextlib.suppress(ConnectionClosed):
            await self.websocket.close()

    async def _greet(self, session: RealtimeSession) -> None:
        """The first response, before the caller says anything (``TwilioBridge(greeting=)``);
        the session sends it as soon as it is open, ahead of the caller's audio."""
        greeting = self.bridge.greeting
        if isinstance(greeting, str):
            await session.say(greeting)
        elif greeting:
            await session.create_response()

    async def _read(self, session: RealtimeSession) -> None:
        try:
            while True:
                self.stream.receive_text(await self.websocket.recv())
                for event in self.stream.events_received():
                    if await self._received(session, event):
                        return
        except ConnectionClosed:
            self.report.ended_by = "disconnected"

    async def _received(self, session: RealtimeSession, event: object) -> bool:
        """Act on one stream event; ``True`` once the call is over."""
        if isinstance(event, m.CallerAudio):
            self.report.caller_frames += 1
            self.inbound += event.payload
            if len(self.inbound) < self.bridge.input_batch_samples:
                return False
            audio, self.inbound = bytes(self.inbound), bytearray()
            try:
                await session.send_audio(audio)
            except InvalidState:  # the session closed under us: the events loop ends the call
                return False
        elif isinstance(event, Played):
            self.report.marks_played += 1
            self.output.acknowledge(event.position)
        elif isinstance(event, m.Dtmf):
            self.report.dtmf.append(event.digit)
            if self.bridge.on_dtmf is not None:
                await _guarded(self.bridge.on_dtmf(self.call, session, event.digit), "on_dtmf")
        elif isinstance(event, m.StreamStopped):
            self.report.ended_by = "stop"
            return True
        elif isinstance(event, m.StreamError):
            self.report.stream_errors.append(event.message)
            logger.debug("twilio stream %s: %s", self.call.stream_sid, event.message)
        return False

    async def _send(self) -> None:
        with contextlib.suppress(ConnectionClosed):  # Twilio hung up: the reader notes it
            await self._send_until_closed()

    async def _send_until_closed(self) -> None:
        output, stream, chunk = self.output, self.stream, self.bridge.chunk_samples
        while True:
            # Less than a chunk held back (its part has not ended): wait a chunk's time for
            # more, then send it as it is — a part that never ends must not keep its tail.
            woken = await _woken(
                self.wake, self.bridge.chunk_ms / 1000 if len(output.ring) else None
            )
            self.wake.clear()
            while len(pcm := output.take(chunk, partial=not woken)):
                stream.send_audio(g711.ulaw_encode(pcm), output.sent_samples)
                self.report.chunks_sent += 1
            for message in stream.data_to_send():
                await self.websocket.send(message)

    async def _events(self, session: RealtimeSession) -> None:
        async for event in session:
            if self.bridge.on_event is not None:
                await _guarded(self.bridge.on_event(self.call, session, event), "on_event")
        if not self.report.ended_by:
            self.report.ended_by = "session"


async def _woken(event: asyncio.Event, timeout_s: float | None) -> bool:
    """Wait for ``event`` (at most ``timeout_s``); whether it was set."""
    if timeout_s is None or event.is_set():
        await event.wait()
        return True
    try:
        await asyncio.wait_for(event.wait(), timeout_s)
    except asyncio.TimeoutError:
        return False
    return True


async def _guarded(handler: Awaitable[None], name: str) -> None:
    """An application handler: what it raises is logged, and the call goes on."""
    try:
        await handler
    except Exception:
        logger.exception("the bridge's %s handler raised; the call goes on", name)
