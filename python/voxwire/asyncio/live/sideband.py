"""A :class:`~voxwire.asyncio.live.LiveSession` attached as the sideband of a SIP call.

A call for GPT-Live is announced by the ``live.transport.incoming`` webhook and accepted over
REST (:class:`voxwire.telephony.live.LiveCalls`); its audio then travels between the phone
network and OpenAI, never through the application. The application follows and steers the
session over a *sideband*: a websocket attached by the call's session id
(``/v1/live/sessions/{session_id}/attach``)::

    session = await calls.accept(event.session_id, agent)
    async with LiveSession.attach(event.session_id, agent, session=session) as live:
        async for item in live:
            ...

What changes from a session of its own: no ``session.start`` (the accept started it; the
protocol core is :meth:`voxwire.live.LiveProtocol.sideband`, which knows the accepted
configuration), no audio to send (``send_audio`` raises) or play (the phone plays it; the
audio reflected to the sideband comes as ``live_audio`` events unless an ``audio_output`` is
given), and two telephony events: a key the caller pressed is a
:class:`~voxwire.asyncio.events.DtmfEvent` (``type="dtmf"``, the Realtime session's own event,
so :class:`~voxwire.telephony.dtmf.DigitCollector` takes it; ``received_at`` is this machine's
clock: the Live event carries no time), and :meth:`LiveSideband.send_dtmf` sends a key to the
caller's line, confirmed by a ``dtmf_sent`` event
(:class:`~voxwire.asyncio.live.events.DtmfSentEvent`). What stays: the agent's function tools run
for the Responses backend's delegated calls, client delegation, transcripts, history, metrics,
guardrails. ``close()`` sends ``session.close``, which ends the session and so the call; to
transfer the caller, ``refer`` first (the session then ends by itself). Reconnection is not
offered on a sideband (a lost sideband is not a lost call; attach again).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

import voxwire.asyncio.events as ev
from voxwire.asyncio.errors import ConnectionFailed
from voxwire.asyncio.live.connection import LiveConnecting
from voxwire.asyncio.live.events import DtmfSentEvent
from voxwire.exceptions import ConfigurationError, InvalidState
from voxwire.live import LiveProtocol
from voxwire.live import server_events as se

__all__ = ["LiveSideband", "attach_url", "check_attach_options"]


def attach_url(url: str, session_id: str) -> str:
    """``url`` (the Live sessions endpoint) with ``/{session_id}/attach`` added to its path."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"{parts.path.rstrip('/')}/{session_id}/attach"))


def check_attach_options(options: Mapping[str, Any]) -> None:
    """Refuse what does not apply to a sideband, saying why."""
    if options.get("reconnect") is not None:
        raise ConfigurationError(
            "reconnect= does not apply to LiveSession.attach: a lost sideband is not a lost "
            "call (the session goes on); attach again with a new LiveSession.attach"
        )
    if options.get("audio_input") is not None:
        raise ConfigurationError(
            "audio_input= does not apply to LiveSession.attach: the caller's audio travels on "
            "the SIP call, not on the sideband"
        )


class LiveSideband(LiveConnecting):
    """The sideband half of :class:`~voxwire.asyncio.live.LiveSession` (module docstring)."""

    _attach_to: str | None = None  # the session id of the call (set by LiveSession.attach)
    _attach_session: Mapping[str, Any] | None = None  # the accepted session, as sent
    _require_open: Callable[[], None]  # LiveSession's

    @property
    def attached_to(self) -> str | None:
        """The session id this session is attached to as a sideband, else ``None``."""
        return self._attach_to

    async def send_dtmf(self, key: str) -> str:
        """Send one DTMF key (``0``-``9``, ``A``-``D``, ``*``, ``#``) to the caller's line;
        returns the event id that the :class:`DtmfSentEvent` (or an ``error``) will name."""
        if self._attach_to is None:
            raise InvalidState(
                "send_dtmf needs a session attached to a SIP call: LiveSession.attach(...)"
            )
        self._require_open()
        event_id = self.protocol.send_dtmf(key)
        await self.flush()
        return event_id

    async def _open(self, config: dict[str, object]) -> None:
        if self._attach_to is None:
            await super()._open(config)
            return
        session = self._attach_session or {"type": "live", **config}
        self.protocol = LiveProtocol.sideband(self._attach_to, session, ids=self._ids)
        url = attach_url(self._url, self._attach_to)
        try:
            self._ws = await connect(url, additional_headers=self._headers)
        except (OSError, ConnectionClosed, ValueError) as exc:
            raise ConnectionFailed(f"cannot attach to {url}: {exc}") from exc

    def _on_event(self, event: se.LiveReceivedEvent) -> None:
        if isinstance(event, se.TransportDtmfReceived):
            self.emit(ev.DtmfEvent(key=event.event, received_at=int(time.time())))
        elif isinstance(event, se.TransportDtmfSent | se.TransportDtmfSend):
            self.emit(DtmfSentEvent(key=event.event, event_id=event.client_event_id))
        else:
            super()._on_event(event)
