"""A SIP call accepted as a GPT-Live session, and its sideband, on the local server.

A call announced as ``live.transport.incoming`` and accepted with
``POST /v1/live/sessions/{session_id}/accept`` (:mod:`voxwire.server.core.calls`) has its
session run here once the application attaches its sideband
(``/v1/live/sessions/{session_id}/attach``, the official client's ``live.sideband.connect``):

* the session starts with the accept's configuration and the call's session id: the sideband
  gets ``session.started`` first;
* the caller (:class:`~voxwire.server.phone.PhoneLine`) speaks into the session as SIP media
  does — the audio enters turn detection directly and is reflected to the sideband
  (``session.input_audio.append``, before muting, as the reference describes); a key the caller
  presses arrives as ``transport.dtmf.received``;
* the model's audio goes to the phone (PCM16 24 kHz through G.711, as a handset hears it) and
  is reflected to the sideband too (``session.output_audio.delta``), so that a sideband client
  can follow the timeline;
* ``transport.dtmf.send`` is answered ``transport.dtmf.sent`` and the key reaches the phone
  (:attr:`PhoneLine.keys_heard`); a bad key is an ``invalid_value`` error on ``event``;
* ``refer`` and ``hangup`` end the session: ``session.closed`` (``close_requested``), then the
  sideband is closed (1000).

This emulation's choices where the hosted service documents nothing: the caller starts when the
sideband attaches (not at accept); one sideband per call; the session ends with its sideband,
and the call with it (``session.close`` hangs up).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

import msgspec
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from voxwire.live import server_events as se
from voxwire.live.codec import decode_sideband_client_event
from voxwire.live.objects import LiveSessionConfig
from voxwire.server.connection import ConnectionSettings
from voxwire.server.core.calls import Call
from voxwire.server.live.connection import LiveConnection
from voxwire.server.live.core.forks import LiveSessionStore
from voxwire.server.phone import PhoneLine

__all__ = ["LiveCallConnection"]


class LiveCallConnection(LiveConnection):
    """The Live session of one accepted SIP call, served to its sideband (module docstring)."""

    def __init__(
        self,
        ws: ServerConnection,
        settings: ConnectionSettings,
        stored: LiveSessionStore,
        call: Call,
        line: PhoneLine,
        on_end: Callable[[], None],
    ) -> None:
        super().__init__(ws, settings, stored)
        self._decode = decode_sideband_client_event
        self._call = call
        self._line = line
        self._on_end = on_end

    async def serve(self) -> None:
        """Until the sideband closes; then the call ends (``on_end``) if it is still up."""
        config = msgspec.convert(self._call.session, LiveSessionConfig)
        try:
            await self._carry_out(self._core.accepted(config, self._call.call_id, self._now_s()))
            self._line.ready()
            await super().serve()
        finally:
            self._on_end()

    async def _send(self, events: Sequence[se.LiveServerEvent]) -> None:
        for event in events:
            if isinstance(event, se.OutputAudioDelta):
                self._line.play_agent(event.delta, "audio/pcm")
            elif isinstance(event, se.TransportDtmfSent):
                self._line.keys_heard.append(event.event)
        await super()._send(events)

    async def end(self) -> None:
        """The call was referred or hung up: ``session.closed`` to the sideband."""
        if self._core.session is None or self._core.closed:
            return
        with contextlib.suppress(ConnectionClosed):
            await self._send([self._core.closed_event("close_requested", self._now_s())])

    # --- the caller (a CallerSink) ------------------------------------------------------------

    def input_format(self) -> tuple[str, int]:
        return "audio/pcm", 24_000

    async def caller_audio(self, frame: bytes) -> None:
        if self._core.closed:
            return
        self._hear(frame)
        await self._send([se.InputAudioReflected(audio=frame)])

    async def caller_key(self, digit: str) -> None:
        await self._send([se.TransportDtmfReceived(event_id=self._core.event_id(), event=digit)])
