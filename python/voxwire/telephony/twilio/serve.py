"""Twilio's voice webhook and the media stream websocket on one port (``voxwire phone``).

* ``/twiml`` (the number's "A call comes in" webhook, HTTP POST — Twilio's default — or GET)
  answers TwiML that connects the call to a bidirectional stream
  (https://www.twilio.com/docs/voice/twiml/stream):
  ``<Response><Connect><Stream url="wss://HOST/media"><Parameter name="voxwire_token" .../>``.
* ``/media``: the websocket Twilio opens; each one is a call for the :class:`TwilioBridge`.

The port is served by ``websockets``, which reads GET requests only (the websocket handshake and
the GET webhook, answered in ``process_request``); a POST webhook is recognised by its first
bytes in the connection (``create_connection``: :class:`_PostAware`) and answered there, before
``websockets`` parses anything.

Who may open a call: with ``auth_token`` (the account's Auth Token, ``TWILIO_AUTH_TOKEN``) every
webhook request must carry a valid ``X-Twilio-Signature`` (Twilio's "Webhooks security" page:
base64 HMAC-SHA1 of the full URL as Twilio requested it — for GET, with its query string — keyed
by the Auth Token), and the TwiML hands the stream a token (an HMAC of the ``CallSid`` keyed by
a secret of this process) that the ``start`` message must bring back in its custom parameters,
so only streams started by a signed webhook run the agent (and spend the API key).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import secrets
from collections.abc import Callable, Mapping
from http import HTTPStatus
from types import TracebackType
from urllib.parse import parse_qs, urlsplit
from xml.sax.saxutils import quoteattr

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import InvalidHeader
from websockets.http11 import Request, Response

from voxwire.exceptions import InvalidState
from voxwire.logs import quiet_client_handshake_failures
from voxwire.telephony.twilio.bridge import CallInfo, CallReport, TwilioBridge

__all__ = ["PhoneServer", "twilio_signature"]

logger = logging.getLogger("voxwire.telephony.twilio")

TOKEN_PARAMETER = "voxwire_token"


def twilio_signature(auth_token: str, url: str, params: Mapping[str, str] | None = None) -> str:
    """``X-Twilio-Signature`` of a request to ``url`` (with POST ``params``, sorted by name,
    each name and value appended to the URL): base64 of HMAC-SHA1 keyed by the Auth Token."""
    data = url + "".join(f"{k}{v}" for k, v in sorted((params or {}).items()))
    # surrogatepass: a URL or form read from a hostile request (non-ASCII bytes are lone
    # surrogates in websockets' headers) signs to some digest, never raises.
    digest = hmac.new(auth_token.encode(), data.encode("utf-8", "surrogatepass"), hashlib.sha1)
    return base64.b64encode(digest.digest()).decode("ascii")


class PhoneServer:
    """Serves ``bridge`` on ``host:port`` (``127.0.0.1``; port 0: any free port).

    ``public_url``: the ``https://`` base Twilio reaches this server at (a tunnel, a proxy):
    the stream URL in the TwiML and the signed URL are built from it (default: from the
    request's ``Host`` header, ``wss://``). ``auth_token``: check webhook signatures and
    stream tokens (see the module docstring); ``None`` accepts every request (local tests).
    ``on_call_ended(report)``: called with each call's :class:`CallReport` when it ends (``voxwire
    phone`` prints its :meth:`~CallReport.summary`).

    :meth:`close` ends the calls in progress, also one still opening its session (a slow or
    unreachable endpoint): it does not wait for them to end by themselves."""

    def __init__(
        self,
        bridge: TwilioBridge,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        public_url: str | None = None,
        auth_token: str | None = None,
        webhook_path: str = "/twiml",
        media_path: str = "/media",
        on_call_ended: Callable[[CallReport], None] | None = None,
    ) -> None:
        self.bridge = bridge
        self.host, self.port = host, port
        self.public_url = public_url.rstrip("/") if public_url else None
        self.auth_token = auth_token
        self.webhook_path, self.media_path = webhook_path, media_path
        self._secret = secrets.token_bytes(32)
        self._server: Server | None = None
        self._calls: set[asyncio.Task[object]] = set()
        self.on_call_ended = on_call_ended
        self.reports: list[CallReport] = []
        """One per call that ended, in order."""
        if auth_token:
            bridge.authorize = self._authorized

    async def __aenter__(self) -> PhoneServer:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        if self._server is not None:
            raise InvalidState("the phone server is already running")
        self._server = await serve(
            self._call,
            self.host,
            self.port,
            process_request=self._route,
            create_connection=_post_aware(self._post),
            max_size=2**20,
            logger=_WIRE,
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()  # stops listening; each stream is closed (1001)
            # A call still opening its session would only notice when that ends (up to the
            # session's open timeout): its task is cancelled, and the session closes with it.
            for task in self._calls:
                task.cancel()
            await server.wait_closed()

    async def serve_forever(self) -> None:
        if self._server is None:
            await self.start()
        assert self._server is not None
        await self._server.serve_forever()

    def url(self, path: str | None = None, *, scheme: str = "http") -> str:
        """This server's local URL (``scheme`` ``ws`` for the media stream)."""
        return f"{scheme}://{self.host}:{self.port}{path or ''}"

    # -- HTTP ------------------------------------------------------------------------------

    def _route(self, connection: ServerConnection, request: Request) -> Response | None:
        if not all(value.isascii() for _, value in request.headers.raw_items()):
            # Read by websockets as lone surrogates, on which its own checks fail (and Twilio
            # sends ASCII only): refuse first.
            return connection.respond(HTTPStatus.BAD_REQUEST, "header values must be ASCII\n")
        path = urlsplit(request.path).path
        if path == self.media_path:
            return None  # the websocket handshake goes on
        if path != self.webhook_path:
            return connection.respond(HTTPStatus.NOT_FOUND, _text(f"nothing at {path}\n"))
        return self._twiml(connection, request)

    def _twiml(self, connection: ServerConnection, request: Request) -> Response:
        status, body = self.webhook(request.path, request.headers, {})
        response = connection.respond(status, _text(body))
        if status == HTTPStatus.OK:
            response.headers = Headers(
                [(k, v) for k, v in response.headers.raw_items() if k.lower() != "content-type"]
            )
            response.headers["Content-Type"] = "text/xml; charset=utf-8"
        return response

    def webhook(
        self, target: str, headers: Headers, form: Mapping[str, str]
    ) -> tuple[HTTPStatus, str]:
        """The voice webhook: ``target`` (path and query as requested), the request's headers
        and its POST ``form`` -> ``(status, body)`` (TwiML when 200)."""
        base = self.public_url or f"https://{headers.get('Host', 'localhost')}"
        if self.auth_token:
            signed = headers.get("X-Twilio-Signature", "")
            expected = twilio_signature(self.auth_token, base + target, form)
            # As bytes: compare_digest refuses str with non-ASCII characters (TypeError).
            if not hmac.compare_digest(signed.encode("utf-8", "surrogatepass"), expected.encode()):
                logger.warning("twilio webhook refused: bad or missing X-Twilio-Signature")
                return (
                    HTTPStatus.FORBIDDEN,
                    "X-Twilio-Signature does not match (is --public-url the URL Twilio calls?)\n",
                )
        query = parse_qs(urlsplit(target).query)
        call_sid = form.get("CallSid") or query.get("CallSid", [""])[0]
        stream_url = "wss://" + base.split("://", 1)[-1] + self.media_path
        token = quoteattr(self._token(call_sid))
        return HTTPStatus.OK, (
            '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Connect>'
            f"<Stream url={quoteattr(stream_url)}>"
            f'<Parameter name="{TOKEN_PARAMETER}" value={token}/>'
            "</Stream></Connect></Response>\n"
        )

    def _post(self, head: bytes, body: bytes) -> bytes:
        """A POST request (its head and body) -> the whole HTTP response."""
        lines = head.decode("latin-1").split("\r\n")
        target = lines[0].split(" ")[1] if len(lines[0].split(" ")) == 3 else "/"
        headers = Headers()
        try:
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name:
                    headers[name.strip()] = value.strip()
        except InvalidHeader as exc:  # a control character in a name or value
            status, text = HTTPStatus.BAD_REQUEST, f"malformed request header: {exc}\n"
        else:
            status, text = self._post_answer(target, headers, body)
        kind = "text/xml" if status == HTTPStatus.OK else "text/plain"
        data = text.encode("utf-8", "replace")
        return (
            f"HTTP/1.1 {status.value} {status.phrase}\r\nContent-Type: {kind}; charset=utf-8\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
        ).encode() + data

    def _post_answer(self, target: str, headers: Headers, body: bytes) -> tuple[HTTPStatus, str]:
        if urlsplit(target).path != self.webhook_path:
            return HTTPStatus.NOT_FOUND, f"nothing to POST at {urlsplit(target).path}\n"
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
        return self.webhook(target, headers, form)

    def _token(self, call_sid: str) -> str:
        raw = call_sid.encode("utf-8", "surrogatepass")
        return hmac.new(self._secret, raw, hashlib.sha256).hexdigest()

    def _authorized(self, call: CallInfo) -> bool:
        given = str(call.custom_parameters.get(TOKEN_PARAMETER, ""))
        expected = self._token(call.call_sid).encode()
        return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected)

    # -- the media stream ------------------------------------------------------------------

    async def _call(self, connection: ServerConnection) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._calls.add(task)
        report = CallReport()
        try:
            await self.bridge.handle(connection, report)
        finally:  # also a call that close() cancelled (ended_by "cancelled")
            self._calls.discard(task)
            self.reports.append(report)
            if self.on_call_ended is not None:
                self.on_call_ended(report)
        logger.info(
            "call %s ended (%s) after %.1f s",
            report.call.call_sid if report.call else "-",
            report.ended_by,
            report.duration_s,
        )


MAX_POST_BYTES = 64 * 1024
"""Largest webhook request read (Twilio's voice webhook form is about 1 KiB)."""


def _post_aware(answer: Callable[[bytes, bytes], bytes]) -> type[ServerConnection]:
    """A :class:`ServerConnection` that answers a POST itself (see the module docstring)."""

    class _PostAware(ServerConnection):
        _buffer = b""
        _websocket = False

        def data_received(self, data: bytes) -> None:
            if self._websocket:
                super().data_received(data)
                return
            self._buffer += data
            if not self._buffer.startswith(b"POST "[: len(self._buffer)]):
                self._websocket, data, self._buffer = True, self._buffer, b""
                super().data_received(data)
                return
            head, found, body = self._buffer.partition(b"\r\n\r\n")
            length = _content_length(head)
            if len(self._buffer) > MAX_POST_BYTES or (found and length is None):
                self._reply(b"HTTP/1.1 413 Content Too Large\r\nConnection: close\r\n\r\n")
            elif found and length is not None and len(body) >= length:
                self._reply(answer(head, body[:length]))

        def _reply(self, response: bytes) -> None:
            # websockets then sees a connection closed before any request and would log its
            # "opening handshake failed" as an error: this one was answered, not failed.
            self.logger = _ANSWERED
            self._buffer = b""
            self.transport.write(response)
            self.transport.close()

    return _PostAware


_WIRE = quiet_client_handshake_failures(logging.getLogger("voxwire.telephony.twilio.websockets"))
_ANSWERED = logging.getLogger("voxwire.telephony.twilio.webhook")
_ANSWERED.addFilter(lambda record: record.getMessage() != "opening handshake failed")


def _text(body: str) -> str:
    """``body`` with what cannot be sent as UTF-8 replaced: a path or ``Host`` of non-ASCII bytes
    comes from websockets as lone surrogates, which ``respond`` could not encode."""
    return body.encode("utf-8", "replace").decode("utf-8")


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            text = value.strip()
            return int(text) if text.isdigit() and int(text) <= MAX_POST_BYTES else None
    return None
