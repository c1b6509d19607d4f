"""``RealtimeServer``: the local Realtime server over websockets (asyncio API).

The handshake is checked before the upgrade, as the real service does:

* path ``/v1/realtime`` (``model=…`` or ``call_id=…`` in the query; other paths: HTTP 404);
* with a ``token``, ``Authorization: Bearer <token>`` (or the browser form, subprotocol
  ``openai-insecure-api-key.<token>``) — anything else: HTTP 401 with the service's JSON error;
* the ``realtime`` subprotocol is accepted when offered.

Tokens are compared in constant time and never logged: websockets' debug log of request
headers goes through a filter that redacts them.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Sequence
from http import HTTPStatus
from types import TracebackType
from typing import Any, Final, Literal, Protocol
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

from voxwire.logs import quiet_client_handshake_failures, redacted_logger
from voxwire.server.connection import ConnectionSettings, EventObserver, RealtimeConnection
from voxwire.server.core.config import DEFAULT_MODEL
from voxwire.server.core.conversation import DEFAULT_AUDIO_BUDGET_BYTES
from voxwire.server.core.input_buffer import MAX_APPEND_BYTES
from voxwire.server.core.mcp import McpServers
from voxwire.server.engines.responder import Responder, RulesResponder, Scenario
from voxwire.server.engines.transcribe import Transcriber, WhisperTranscriber
from voxwire.server.engines.tts import ENGINES, SpeechEngine, Voice
from voxwire.server.faults import Fault
from voxwire.server.live.connection import LIVE_PATH, LiveConnection, attach_source, fork_source
from voxwire.server.live.core.forks import LiveSessionStore
from voxwire.server.responses import Pacing

__all__ = ["RealtimeServer"]

log = logging.getLogger("voxwire.server")

PATHS: Final = ("/v1/realtime",)
SUBPROTOCOL: Final = Subprotocol("realtime")
_KEY_SUBPROTOCOL: Final = "openai-insecure-api-key."
#: The headers of a handshake that websockets or this server read (lower case): past ASCII, 400.
_CHECKED: Final = frozenset(
    {"authorization", "connection", "upgrade", "host", "origin", "sec-websocket-key",
     "sec-websocket-version", "sec-websocket-protocol", "sec-websocket-extensions"}
)  # fmt: skip
# A 15 MiB append is ~20 MiB of base64 plus the JSON around it: receive it, then answer with
# the service's error instead of dropping the connection.
#: How long a connection waits for the client's answer to its close frame before cutting the
#: TCP connection, and how long closing the whole server may take before the rest are cut.
CLOSE_TIMEOUT_S: Final = 0.5
SHUTDOWN_S: Final = 0.8
MAX_FRAME_BYTES: Final = MAX_APPEND_BYTES * 4 // 3 + 1024 * 1024


_wire_log = quiet_client_handshake_failures(redacted_logger("voxwire.server.websockets"))


class KeyBook(Protocol):
    """Keys the server accepts besides its token, each with the session it starts with
    (``voxwire.server.client_secrets.ClientSecrets``: minted ephemeral keys)."""

    def session_for(self, key: str) -> dict[str, Any] | None: ...


class CallLines(Protocol):
    """The SIP calls a websocket may attach to by ``call_id`` (``voxwire.server.sip.SipTrunk``)."""

    def attachable(self, call_id: str) -> bool: ...

    def connect(
        self, call_id: str, ws: ServerConnection, settings: ConnectionSettings
    ) -> RealtimeConnection: ...

    def live_attachable(self, session_id: str) -> bool: ...

    def attach_live(
        self, session_id: str, ws: ServerConnection, settings: ConnectionSettings
    ) -> LiveConnection: ...


class RealtimeServer:
    """A local, protocol-faithful Realtime server.

    ``tts="auto"`` (default) speaks with espeak-ng when it is installed, else hibari;
    ``tts="hibari"`` / ``"espeak"`` choose one; with no voice available, :meth:`start` raises
    :class:`~voxwire.server.engines.tts.NoVoiceError` naming what to install. ``tts=None``
    answers in text only (sessions default to ``["text"]``); a
    :class:`~voxwire.server.engines.tts.SpeechEngine` of your own speaks instead (a test's: one
    that holds a synthesis until the test lets it go).
    ``transcriber`` transcribes committed user audio when a session asks for it
    (``audio.input.transcription``): ``"auto"`` (default) is Whisper tiny.en through
    faster-whisper if the ``transcribe`` extra is installed, loaded on first use, shared by
    every connection and closed with the server; a
    :class:`~voxwire.server.engines.transcribe.Transcriber` of your own stays yours to close;
    ``None`` (or ``"auto"`` without the extra) makes every request fail
    with ``input_audio_transcription.failed`` naming what to install.
    ``responder`` decides what is said (default: :class:`RulesResponder` over ``scenario``).
    ``audio_budget_bytes``: the item audio each session keeps for ``conversation.item.truncate``
    and ``conversation.item.retrieve`` (default 32 MiB, the most recent parts; the newest part
    is always kept whole; ``None``: all of it); older parts keep their duration and transcript,
    and a truncate or retrieve that needs their audio gets an ``invalid_value`` error
    (:mod:`voxwire.server.core.conversation`).
    ``faults`` (:mod:`voxwire.server.faults`) are armed on every connection; a test reaches one
    live connection through :attr:`connections` and arms faults on it alone with ``inject``.
    ``observer(connection, events)``: told every Realtime event a connection sends, then
    ``None`` when it ends (``voxwire serve --metrics-port``: voxwire.export.process).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        token: str | None = None,
        scenario: Scenario | None = None,
        responder: Responder | None = None,
        tts: str | SpeechEngine | None = "auto",
        pacing: Pacing | None = None,
        max_session_s: float = 60 * 60,
        seed: int | None = None,
        faults: Sequence[Fault] = (),
        transcriber: Transcriber | Literal["auto"] | None = "auto",
        audio_budget_bytes: int | None = DEFAULT_AUDIO_BUDGET_BYTES,
        observer: EventObserver | None = None,
    ) -> None:
        if audio_budget_bytes is not None and (
            not isinstance(audio_budget_bytes, int) or audio_budget_bytes < 0
        ):
            raise ValueError(
                f"audio_budget_bytes={audio_budget_bytes!r} is invalid: expected bytes >= 0, "
                "or None to keep all item audio"
            )
        if isinstance(tts, str) and tts not in ENGINES:
            raise ValueError(
                f"tts={tts!r} is invalid: expected {', '.join(map(repr, ENGINES))} "
                "or None (text only)"
            )
        if responder is not None and scenario is not None:
            raise ValueError("give either a scenario (for the rules responder) or a responder")
        if max_session_s <= 0:
            raise ValueError(f"max_session_s={max_session_s!r} is invalid: expected > 0")
        self._host, self._port, self._token = host, port, token
        self._responder: Responder = responder or RulesResponder(scenario or Scenario())
        self._mcp_servers = scenario.mcp_servers if scenario is not None else McpServers()
        self._tts, self._pacing = tts, pacing or Pacing()
        self._max_session_s, self._seed = max_session_s, seed
        self._faults = tuple(faults)
        self._audio_budget_bytes = audio_budget_bytes
        self._observer = observer
        self._connections: dict[ServerConnection, RealtimeConnection] = {}
        self.live_sessions = LiveSessionStore()
        """The Live sessions started with ``store: true``, forkable once ended."""
        self._server: Server | None = None
        self._voice: Voice | None = None
        self._transcriber_option = transcriber
        self._own_transcriber: WhisperTranscriber | None = None
        self._closed = False
        self._keys: KeyBook | None = None
        self._calls: CallLines | None = None

    def use_client_secrets(self, keys: KeyBook) -> None:
        """Accept the keys ``keys`` minted (even with a ``token``), each session starting with
        the configuration its key was minted with (docs/web.md)."""
        self._keys = keys

    def use_calls(self, calls: CallLines) -> None:
        """Serve ``?call_id=…`` websockets from ``calls`` (the SIP emulation's trunk)."""
        self._calls = calls

    # --- lifecycle --------------------------------------------------------------------------------

    def _start_transcriber(self) -> Transcriber | None:
        if self._transcriber_option == "auto":
            # Found, not loaded: the model loads on the first transcription.
            if WhisperTranscriber.installed():
                self._own_transcriber = WhisperTranscriber()
            return self._own_transcriber
        return self._transcriber_option

    async def start(self) -> None:
        if self._server is not None or self._closed:
            raise RuntimeError("RealtimeServer.start() may be called once")
        # Fail here, before listening, if the voice cannot be loaded (NoVoiceError says why).
        tts = self._tts
        self._voice = (
            None if tts is None else Voice.load(tts) if isinstance(tts, str) else Voice(tts)
        )
        transcriber = self._start_transcriber()
        settings = ConnectionSettings(
            responder=self._responder,
            voice=self._voice,
            pacing=self._pacing,
            max_session_s=self._max_session_s,
            ids_seed=self._seed,
            faults=self._faults,
            transcriber=transcriber,
            mcp_servers=self._mcp_servers,
            audio_budget_bytes=self._audio_budget_bytes,
            observer=self._observer,
        )

        async def handler(ws: ServerConnection) -> None:
            assert ws.request is not None
            if _is_live(ws.request.path):  # GPT-Live: a session, a fork, a SIP call's sideband
                return await self._live_connection(ws, settings).serve()
            query = parse_qs(_text(urlsplit(ws.request.path).query))
            model = query.get("model", [DEFAULT_MODEL])[0]
            call_id = query.get("call_id", [None])[0]
            if call_id is not None and self._calls is not None:
                connection = self._calls.connect(call_id, ws, settings)
            else:
                connection = RealtimeConnection(ws, model, settings)
                minted = self._minted_session(ws.request.headers)
                if minted is not None:
                    connection.session.configure(minted)
            self._connections[ws] = connection
            try:
                await connection.serve()
            finally:
                del self._connections[ws]

        try:
            self._server = await serve(
                handler,
                self._host,
                self._port,
                process_request=self._check_request,
                select_subprotocol=_select_subprotocol,
                max_size=MAX_FRAME_BYTES,
                compression=None,
                logger=_wire_log,
                close_timeout=CLOSE_TIMEOUT_S,
            )
        except BaseException:
            self._close_voice()
            raise

    def _live_connection(
        self, ws: ServerConnection, settings: ConnectionSettings
    ) -> LiveConnection:
        assert ws.request is not None
        path = urlsplit(ws.request.path).path
        attach_to = attach_source(path)
        if attach_to is not None:  # a Live SIP call's sideband (server/live/sip.py)
            assert self._calls is not None  # checked at the handshake
            return self._calls.attach_live(attach_to, ws, settings)
        return LiveConnection(ws, settings, self.live_sessions, fork_source(path))

    async def close(self) -> None:
        """Stop listening, close every connection (a close frame, 1001) and wait for their
        tasks; idempotent. Bounded: a client that does not answer the close frame within
        ``CLOSE_TIMEOUT_S`` is cut off, and nothing waits for a voice, a transcription or a
        chat endpoint still working (their threads are dropped)."""
        if self._closed:
            return
        self._closed = True
        if self._server is not None:
            self._server.close(close_connections=True)
            try:
                await asyncio.wait_for(self._server.wait_closed(), SHUTDOWN_S)
            except asyncio.TimeoutError:
                # A connection stuck past its close timeout (a peer that reads nothing): cut.
                for ws in self._connections:
                    ws.transport.abort()
                await self._server.wait_closed()
        self._close_voice()
        if self._voice is not None:
            await self._voice.wait_closed(SHUTDOWN_S)

    def _close_voice(self) -> None:
        if self._voice is not None:
            self._voice.close()
        if self._own_transcriber is not None:
            self._own_transcriber.close()

    @property
    def tts_engine(self) -> str | None:
        """The voice in use once started: ``"hibari"``, ``"espeak"``, or ``None`` (text only)."""
        return self._voice.engine if self._voice is not None else None

    async def __aenter__(self) -> RealtimeServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def connections(self) -> tuple[RealtimeConnection, ...]:
        """The live connections, oldest first (``inject`` arms faults on one of them)."""
        return tuple(self._connections.values())

    # --- addresses --------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the server is not started: use 'async with RealtimeServer()'")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def base_url(self) -> str:
        """``ws://host:port/v1`` — the ``websocket_base_url`` of the official client."""
        return f"ws://{self._host}:{self.port}/v1"

    def url(self, model: str = DEFAULT_MODEL) -> str:
        """The full URL of a realtime session with ``model``."""
        return f"{self.base_url}/realtime?model={model}"

    # --- handshake --------------------------------------------------------------------------------

    def _check_request(self, ws: ServerConnection, request: Request) -> Response | None:
        odd = next(
            (
                n
                for n, v in request.headers.raw_items()
                if n.lower() in _CHECKED and not v.isascii()
            ),
            None,
        )
        if odd is not None:
            # websockets reads header bytes past ASCII as lone surrogates and fails on them in
            # the headers it checks (the key's digest, its own error pages): a clear 400 first.
            return _json_response(
                ws,
                HTTPStatus.BAD_REQUEST,
                "invalid_header",
                f"The {odd[:64]} header holds bytes that are not ASCII: send ASCII header values.",
            )
        path = urlsplit(request.path).path
        if path not in PATHS and not _is_live(path):
            return _json_response(
                ws,
                HTTPStatus.NOT_FOUND,
                "not_found",
                f"Invalid URL (GET {path}): the realtime endpoint is /v1/realtime?model=...",
            )
        if self._token is not None and not self._authorized(request.headers):
            return _json_response(
                ws,
                HTTPStatus.UNAUTHORIZED,
                "invalid_api_key",
                "Incorrect API key provided. Send 'Authorization: Bearer <token>' with the "
                "token this voxwire server was started with.",
            )
        attach_to = attach_source(path)
        if attach_to is not None and (
            self._calls is None or not self._calls.live_attachable(attach_to)
        ):
            return _json_response(
                ws,
                HTTPStatus.NOT_FOUND,
                "session_not_found",
                f"No accepted SIP session {attach_to[:128]!r} without a sideband: accept the "
                "call first (POST /v1/live/sessions/{session_id}/accept); one sideband per call.",
            )
        call_id = parse_qs(urlsplit(request.path).query).get("call_id", [None])[0]
        if call_id is not None and (self._calls is None or not self._calls.attachable(call_id)):
            return _json_response(
                ws,
                HTTPStatus.NOT_FOUND,
                "call_not_found",
                f"No accepted call with id {call_id[:128]!r}: accept the call first (POST "
                "/v1/realtime/calls/{call_id}/accept).",
            )
        return None

    def _minted_session(self, headers: Headers) -> dict[str, Any] | None:
        if self._keys is None:
            return None
        sessions = (self._keys.session_for(key) for key in _offered_keys(headers))
        return next((s for s in sessions if s is not None), None)

    def authorized(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header value carries this server's token (always, when
        it has none): the SIP emulation's REST endpoints check it as the handshake does."""
        if self._token is None:
            return True
        auth = authorization or ""
        return auth[:7].lower() == "bearer " and hmac.compare_digest(
            auth[7:].strip().encode("utf-8", "surrogatepass"), self._token.encode()
        )

    def _authorized(self, headers: Headers) -> bool:
        assert self._token is not None
        if self._minted_session(headers) is not None:
            return True
        expected = self._token.encode()
        offered = _offered_keys(headers)
        # surrogatepass: websockets reads non-ASCII header bytes as lone surrogates; such a key
        # is simply not the token (401), never an encoding error (500).
        return any(
            hmac.compare_digest(candidate.encode("utf-8", "surrogatepass"), expected)
            for candidate in offered
        )


def _offered_keys(headers: Headers) -> list[str]:
    """The keys a handshake offers: ``Authorization: Bearer`` and the key subprotocol."""
    offered: list[str] = []
    auth = headers.get("Authorization", "")
    if auth[:7].lower() == "bearer ":
        offered.append(auth[7:].strip())
    for value in headers.get_all("Sec-WebSocket-Protocol"):
        for protocol in value.split(","):
            protocol = protocol.strip()
            if protocol.startswith(_KEY_SUBPROTOCOL):
                offered.append(protocol[len(_KEY_SUBPROTOCOL) :])
    return offered


def _text(raw: str) -> str:
    """A part of the request target as text: websockets reads its bytes past ASCII as lone
    surrogates (surrogateescape); they are read again as UTF-8, anything else replaced, so that
    what the session echoes (the model) can be sent."""
    return raw.encode("ascii", "surrogateescape").decode("utf-8", "replace")


def _select_subprotocol(
    ws: ServerConnection, subprotocols: Sequence[Subprotocol]
) -> Subprotocol | None:
    # Accept "realtime" if offered; other offers (the key subprotocol) need no echo.
    return SUBPROTOCOL if SUBPROTOCOL in subprotocols else None


def _json_response(ws: ServerConnection, status: HTTPStatus, code: str, message: str) -> Response:
    body = {
        "error": {"message": message, "type": "invalid_request_error", "code": code, "param": None}
    }
    response = ws.respond(status, json.dumps(body) + "\n")
    del response.headers["Content-Type"]
    response.headers["Content-Type"] = "application/json"
    return response


def _is_live(path: str) -> bool:
    """A GPT-Live endpoint: the sessions path, a stored session's fork, a sideband."""
    path = urlsplit(path).path
    return path == LIVE_PATH or fork_source(path) is not None or attach_source(path) is not None
