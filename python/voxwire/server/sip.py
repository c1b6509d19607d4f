"""``SipTrunk``: the Realtime API's SIP path, emulated on the local server, offline.

A call is announced to the application's webhook URL as the hosted service announces it — a
``realtime.call.incoming`` event, signed with the webhook secret (Standard Webhooks) — and the
REST endpoints ``POST /v1/realtime/calls/{call_id}/accept|reject|refer|hangup`` answer as the
hosted ones do (:mod:`voxwire.server.core.calls`). Once accepted, the call's session is attached
by ``call_id`` on the server's websocket (``/v1/realtime?call_id=…``) and the phone
(:mod:`voxwire.server.phone`) plays the caller into it and records the agent. ``refer`` and
``hangup`` end the call: the phone stops and the call's websockets are closed (1000).

GPT-Live: ``trunk.call(caller, api="live")`` announces the call as ``live.transport.incoming``
(``data.type: "sip"``, ``data.session_id``, ``data.sip_headers``); it is controlled with
``POST /v1/live/sessions/{session_id}/accept|reject|refer|hangup`` and its session runs when
the sideband attaches (``/v1/live/sessions/{session_id}/attach``; :mod:`voxwire.server.live.sip`).

The REST endpoints listen on a port of their own: the websocket server reads only ``GET``
handshakes, so the few REST routes are served with h11 (a sans-I/O HTTP/1.1 parser, the
``telephony`` extra) over asyncio streams; the webhook is sent with h11 too, to an ``http://``
URL (a local application; ``https://`` is not supported here).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

import h11
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from voxwire.protocol.sip import sign_webhook
from voxwire.server.connection import ConnectionSettings, RealtimeConnection
from voxwire.server.core.calls import Call, CallApi, CallBook, RestAnswer, unauthorized
from voxwire.server.listening import StartsAndCloses
from voxwire.server.live.core.config import start_problem
from voxwire.server.live.sip import LiveCallConnection
from voxwire.server.phone import Caller, PhoneLine
from voxwire.server.server import RealtimeServer

__all__ = ["PhoneCall", "RestRequest", "SipTrunk"]

log = logging.getLogger("voxwire.server.sip")
MAX_REQUEST_BYTES: Final = 2 * 1024 * 1024
_READ_BYTES: Final = 65536
_TIMEOUT_S: Final = 10.0


@dataclass(frozen=True)
class RestRequest:
    """One REST request the trunk answered (for tests: every body can be checked)."""

    method: str
    path: str
    body: bytes
    status: int
    answer: dict[str, object] | None


@dataclass
class PhoneCall:
    """A call the trunk placed: its state on the line and the phone's recording."""

    call: Call
    line: PhoneLine
    webhook_status: int | None = None  # the application's HTTP answer to the webhook
    live: LiveCallConnection | None = None  # the Live session of a call accepted as Live
    _settled: asyncio.Event = field(default_factory=asyncio.Event)
    _ended: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _sockets: list[ServerConnection] = field(default_factory=list)

    @property
    def call_id(self) -> str:
        return self.call.call_id

    @property
    def state(self) -> str:
        return self.call.state

    async def answered(self, timeout_s: float = _TIMEOUT_S) -> str:
        """Wait until the call is accepted or rejected; its state then."""
        await asyncio.wait_for(self._settled.wait(), timeout_s)
        return self.call.state

    async def caller_finished(self, timeout_s: float = _TIMEOUT_S) -> None:
        """Wait until the caller's script has played (it starts when a websocket attaches)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not self._tasks:
            if loop.time() > deadline:
                raise asyncio.TimeoutError("no websocket attached to the call")
            await asyncio.sleep(0.01)
        await asyncio.wait_for(asyncio.gather(*self._tasks), max(0.0, deadline - loop.time()))

    async def ended(self, timeout_s: float = _TIMEOUT_S) -> str:
        """Wait until the call is rejected, referred or hung up; its state then."""
        await asyncio.wait_for(self._ended.wait(), timeout_s)
        return self.call.state


class SipTrunk(StartsAndCloses):
    """Rings ``server``'s emulated phone number: ``await trunk.call(caller)`` announces a call to
    ``webhook_url`` signed with ``secret``; the application answers on :attr:`api_base_url`."""

    def __init__(
        self,
        server: RealtimeServer,
        *,
        webhook_url: str,
        secret: str,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        parts = urlsplit(webhook_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(
                f"webhook_url={webhook_url!r} is invalid: the emulated trunk posts to a local "
                "http:// URL such as 'http://127.0.0.1:8000/webhook'"
            )
        sign_webhook(b"", secret=secret, webhook_id="check", timestamp_s=0)  # a bad secret: now
        self._server, self._webhook_url, self._secret = server, webhook_url, secret
        self._host, self._port = host, port
        self.book = CallBook(start_problem)
        self.calls: dict[str, PhoneCall] = {}
        self.requests: list[RestRequest] = []
        self.webhooks_sent: list[tuple[dict[str, str], bytes]] = []
        self._listener: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._ids = itertools.count(1)

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        self._listener = await asyncio.start_server(self._serve_http, self._host, self._port)
        self._server.use_calls(self)

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
        for call in self.calls.values():
            await self._hang_up_line(call)
        # Closing the connections ends their handlers (a read sees the end of the stream).
        for writer in self._writers:
            writer.close()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        if self._listener is not None:
            await self._listener.wait_closed()
            self._listener = None

    @property
    def api_base_url(self) -> str:
        """``http://host:port/v1``: the ``base_url`` of the REST client (and of ``openai``)."""
        if self._listener is None:
            raise RuntimeError("the trunk is not started: use 'async with SipTrunk(...)'")
        port = self._listener.sockets[0].getsockname()[1]
        return f"http://{self._host}:{port}/v1"

    # --- calls ----------------------------------------------------------------------------------

    async def call(
        self,
        caller: Caller | None = None,
        *,
        sip_headers: dict[str, str] | None = None,
        api: CallApi = "realtime",
    ) -> PhoneCall:
        """Ring: a new call, announced to the webhook (returns once the webhook was answered):
        to the Realtime API (``realtime.call.incoming``) or, with ``api="live"``, to GPT-Live
        (``live.transport.incoming``)."""
        if api not in ("realtime", "live"):
            raise ValueError(f"api={api!r} is invalid: expected 'realtime' or 'live'")
        number = next(self._ids)
        prefix = "rtc" if api == "realtime" else "sess_sip"
        call_id = f"{prefix}_{number:04d}{time.time_ns() % 10**12:012d}"
        headers = sip_headers or {
            "From": f'"Caller" <sip:+1555010{number:04d}@pstn.example>',
            "To": "<sip:+18005550100@sip.api.openai.com>",
            "Call-ID": f"{call_id}@pstn.example",
        }
        sip = [{"name": k, "value": v} for k, v in headers.items()]
        phone = PhoneCall(self.book.ring(call_id, sip, api), PhoneLine(caller or Caller()))
        self.calls[call_id] = phone
        event = {
            "object": "event",
            "id": f"evt_{call_id}",
            "type": "realtime.call.incoming",
            "created_at": int(time.time()),
            "data": {"call_id": call_id, "sip_headers": sip},
        }
        if api == "live":
            event["type"] = "live.transport.incoming"
            event["data"] = {"type": "sip", "session_id": call_id, "sip_headers": sip}
        phone.webhook_status = await self._post_webhook(json.dumps(event).encode())
        return phone

    async def _post_webhook(self, body: bytes) -> int:
        webhook_id = f"wh_{time.time_ns():x}"
        headers = sign_webhook(
            body, secret=self._secret, webhook_id=webhook_id, timestamp_s=int(time.time())
        )
        self.webhooks_sent.append((headers, body))
        parts = urlsplit(self._webhook_url)
        try:
            reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
        except OSError as exc:
            raise ConnectionError(
                f"the webhook URL {self._webhook_url} cannot be reached ({exc}): is the "
                "application serving it?"
            ) from exc
        try:
            conn = h11.Connection(h11.CLIENT)
            request = h11.Request(
                method="POST",
                target=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
                headers=[
                    ("Host", parts.netloc),
                    ("User-Agent", "OpenAI/1.0 (+https://platform.openai.com/docs/webhooks)"),
                    ("Content-Type", "application/json"),
                    ("Content-Length", str(len(body))),
                    *headers.items(),
                ],
            )
            writer.write(conn.send(request) + conn.send(h11.Data(data=body)))
            writer.write(conn.send(h11.EndOfMessage()))
            await writer.drain()
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await asyncio.wait_for(reader.read(_READ_BYTES), _TIMEOUT_S))
                elif isinstance(event, h11.Response):
                    return int(event.status_code)
                elif isinstance(event, h11.ConnectionClosed):
                    raise ConnectionError("the webhook endpoint closed without answering")
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    # --- the server's side: attaching a websocket by call_id ------------------------------------

    def attachable(self, call_id: str) -> bool:
        call = self.book.attachable(call_id)
        return call is not None and call.api == "realtime"

    def live_attachable(self, session_id: str) -> bool:
        """A Live call accepted and without a sideband yet."""
        call = self.book.attachable(session_id)
        return call is not None and call.api == "live" and not call.attached

    def attach_live(
        self, session_id: str, ws: ServerConnection, settings: ConnectionSettings
    ) -> LiveCallConnection:
        """The sideband of an accepted Live call: its session starts, the caller with it."""
        phone = self.calls[session_id]
        connection = LiveCallConnection(
            ws,
            settings,
            self._server.live_sessions,
            phone.call,
            phone.line,
            on_end=lambda: self._session_ended(phone),
        )
        phone.call.attached += 1
        phone._sockets.append(ws)
        phone.live = connection
        task = asyncio.create_task(self._play_live(phone, connection), name="voxwire-sip-caller")
        phone._tasks.append(task)
        return connection

    def _session_ended(self, phone: PhoneCall) -> None:
        """The Live session of a call ended with its sideband: the call ends with it."""
        if phone.call.state == "accepted":
            phone.call.state = "ended"
            self._hang_up_later(phone)

    async def _play_live(self, phone: PhoneCall, connection: LiveCallConnection) -> None:
        try:
            await phone.line.play_into(connection)
        except ConnectionClosed:
            pass  # the application left the call
        except Exception:
            log.exception("the caller of call %s failed", phone.call_id)

    def connect(
        self, call_id: str, ws: ServerConnection, settings: ConnectionSettings
    ) -> RealtimeConnection:
        """The connection of a websocket attached to an accepted call: configured as accepted;
        the first attachment starts the caller."""
        phone = self.calls[call_id]
        line = phone.line
        phone.call.attached += 1
        phone._sockets.append(ws)
        if line.connection is not None:
            # Another sideband on the call (a worker taking over): the same session, which
            # went on while no sideband was attached (docs/telephony.md, failover).
            line.connection.attach(ws)
            return line.connection
        connection = RealtimeConnection(
            ws, phone.call.model, settings, outbound=line.outbound, outlives_socket=True
        )
        connection.session.configure(phone.call.session)
        line.connection = connection
        task = asyncio.create_task(self._play(phone, connection), name="voxwire-sip-caller")
        phone._tasks.append(task)
        return connection

    async def _play(self, phone: PhoneCall, connection: RealtimeConnection) -> None:
        try:
            await phone.line.play_caller(connection)
        except ConnectionClosed:
            pass  # the application left the call: the caller has no one to talk to
        except Exception:
            log.exception("the caller of call %s failed", phone.call_id)

    async def _hang_up_line(self, phone: PhoneCall) -> None:
        for task in phone._tasks:
            task.cancel()
        await asyncio.gather(*phone._tasks, return_exceptions=True)
        if phone.live is not None:
            await phone.live.end()
        if phone.line.connection is not None:
            await phone.line.connection.end()
        for ws in phone._sockets:
            with contextlib.suppress(Exception):
                await ws.close(1000, f"call {phone.call.state}")
        phone._ended.set()
        phone._settled.set()

    # --- REST -----------------------------------------------------------------------------------

    async def _serve_http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self._writers.add(writer)
        try:
            await self._serve_requests(reader, writer)
        except (ConnectionError, asyncio.TimeoutError, h11.RemoteProtocolError):
            pass
        finally:
            self._handlers.discard(task)
            self._writers.discard(writer)
            writer.close()

    async def _serve_requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST_BYTES)
        while True:
            request, body = None, bytearray()
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = await asyncio.wait_for(reader.read(_READ_BYTES), _TIMEOUT_S)
                    conn.receive_data(data)
                    if not data and conn.their_state is not h11.SEND_BODY:
                        return
                elif isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    body += event.data
                    if len(body) > MAX_REQUEST_BYTES:
                        return
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                    return
            assert request is not None
            answer = await self._answer(request, bytes(body))
            payload = b"" if answer.body is None else json.dumps(answer.body).encode()
            headers = [("Content-Length", str(len(payload)))]
            if payload:
                headers.append(("Content-Type", "application/json"))
            writer.write(conn.send(h11.Response(status_code=answer.status, headers=headers)))
            writer.write(conn.send(h11.Data(data=payload)) + conn.send(h11.EndOfMessage()))
            await writer.drain()
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()

    async def _answer(self, request: h11.Request, body: bytes) -> RestAnswer:
        method = request.method.decode("ascii", "replace")
        path = urlsplit(request.target.decode("ascii", "replace")).path
        authorization = next(
            (v.decode("latin-1") for k, v in request.headers if k == b"authorization"), None
        )
        if self._server.authorized(authorization):
            answer = self.book.handle(method, path, body)
        else:
            answer = unauthorized()
        self.requests.append(RestRequest(method, path, body, answer.status, answer.body))
        call = answer.call
        if call is not None:
            phone = self.calls[call.call_id]
            phone._settled.set()
            if call.state in ("rejected", "referred", "ended"):
                # After the answer has gone: closing the call's websocket waits for the client,
                # which may be the one waiting for this answer (a tool calling refer).
                self._hang_up_later(phone)
        return answer

    def _hang_up_later(self, phone: PhoneCall) -> None:
        task = asyncio.create_task(self._hang_up_line(phone), name="voxwire-sip-hangup")
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)
