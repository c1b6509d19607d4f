"""``ClientSecrets``: the local server's ``POST /v1/realtime/client_secrets``, as the hosted one.

An application's server mints a short-lived key for a browser with the session configuration
the browser's session must start with; the browser opens ``/v1/realtime?model=…`` with the key
(subprotocol ``openai-insecure-api-key.<key>``) and its session starts configured so. Here:

* the body is the hosted one (``{"expires_after": {"anchor": "created_at", "seconds": 10..7200},
  "session": {"type": "realtime", ...}}``); the session is checked by the same rules as a
  ``session.update`` (so a bad one gets the error the service would give, HTTP 400);
* the answer is ``{"value": "ek_…", "expires_at": …, "session": {…the whole session…}}``;
* minting needs the server's token when it has one (HTTP 401 otherwise), like every endpoint;
* a key is accepted by the server's handshake until it expires, any number of times.

The endpoint listens on a port of its own: the websocket server reads only ``GET`` handshakes.
It speaks the little of HTTP/1.1 a client of this one route needs (one request per connection,
``Content-Length`` bodies up to 1 MiB); everything else gets the service's JSON error.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from voxwire.protocol.limits import read_json
from voxwire.server.core.config import DEFAULT_MODEL, apply_update, default_session
from voxwire.server.core.errors import ServerError
from voxwire.server.listening import StartsAndCloses

__all__ = ["ClientSecrets", "HttpRequest", "parse_request_head"]

PATH: Final = "/v1/realtime/client_secrets"
MAX_HEAD_BYTES: Final = 16 * 1024
MAX_BODY_BYTES: Final = 1024 * 1024
_DEFAULT_TTL_S: Final = 600
_TIMEOUT_S: Final = 10.0
_STATUS: Final = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
                  405: "Method Not Allowed", 413: "Payload Too Large"}  # fmt: skip


@dataclass(frozen=True)
class HttpRequest:
    """A request line and headers (names in lower case)."""

    method: str
    path: str
    headers: dict[str, str]


def parse_request_head(head: bytes) -> HttpRequest | str:
    """The request line and headers of ``head`` (up to the blank line), or why they are not
    HTTP/1.1. Never raises, whatever the bytes."""
    text = head.decode("latin-1")
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return f"invalid request line {lines[0][:80]!r}"
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            return f"invalid header line {line[:80]!r}"
        headers[name.lower()] = value.strip()
    return HttpRequest(parts[0], parts[1], headers)


@dataclass(frozen=True)
class _Secret:
    expires_at: float
    session: dict[str, Any]


def _error(status: int, code: str | None, message: str, param: str | None = None) -> Answer:
    error = {"message": message, "type": "invalid_request_error", "code": code, "param": param}
    return status, {"error": error}


Answer = tuple[int, dict[str, Any]]


class ClientSecrets(StartsAndCloses):
    """Mints keys for a :class:`~voxwire.server.RealtimeServer` and serves the endpoint.

    ``token``: the server's token (minting needs it when set). ``clock``: seconds since the
    epoch (``time.time``). Give it to the server with ``server.use_client_secrets(secrets)``.
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._token, self._host, self._port, self._clock = token, host, port, clock
        self._keys: dict[str, _Secret] = {}
        self._server: asyncio.Server | None = None

    # -- the decisions (no I/O) -------------------------------------------------------------------

    def session_for(self, key: str) -> dict[str, Any] | None:
        """The session a valid, unexpired key starts with (``None``: not a key minted here)."""
        for value, secret in self._keys.items():
            if hmac.compare_digest(value.encode(), key.encode("utf-8", "surrogatepass")):
                return secret.session if self._clock() < secret.expires_at else None
        return None

    def mint(self, body: object, authorization: str | None = None) -> Answer:
        """The answer to one ``POST`` with ``body`` (parsed JSON): status and JSON object."""
        if not self._authorized(authorization):
            return _error(401, "invalid_api_key", "Incorrect API key provided.")
        if not isinstance(body, dict):
            return _error(400, "invalid_type", "The body must be a JSON object.")
        ttl = _ttl(body.get("expires_after"))
        if isinstance(ttl, str):
            return _error(400, "invalid_value", ttl, "expires_after")
        session = body.get("session", {"type": "realtime"})
        if not isinstance(session, dict) or session.get("type", "realtime") != "realtime":
            return _error(400, "invalid_value", "Only realtime sessions are emulated here "
                          "(session.type 'realtime').", "session.type")  # fmt: skip
        model = session.get("model", DEFAULT_MODEL)
        if not isinstance(model, str) or not model:
            return _error(400, "invalid_type", "session.model must be text.", "session.model")
        update = {"type": "realtime", **{k: v for k, v in session.items() if k != "model"}}
        now = self._clock()
        base = default_session(session_id="sess_client_secret", model=model,
                               expires_at=int(now + ttl), output_modalities=["audio"])  # fmt: skip
        try:
            effective = apply_update(base, update, assistant_audio_sent=False)
        except ServerError as exc:
            return _error(400, exc.code, str(exc), exc.param)
        value = "ek_" + secrets.token_hex(16)
        self._keys = {k: s for k, s in self._keys.items() if s.expires_at > now}
        self._keys[value] = _Secret(now + ttl, update)
        return 200, {"value": value, "expires_at": int(now + ttl), "session": effective}

    def _authorized(self, authorization: str | None) -> bool:
        if self._token is None:
            return True
        auth = authorization or ""
        return auth[:7].lower() == "bearer " and hmac.compare_digest(
            auth[7:].strip().encode("utf-8", "surrogatepass"), self._token.encode()
        )

    # -- the endpoint -----------------------------------------------------------------------------

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, self._host, self._port, limit=MAX_HEAD_BYTES
        )

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def base_url(self) -> str:
        """``http://host:port/v1`` — what :func:`voxwire.web.mint_client_secret` takes."""
        if self._server is None:
            raise RuntimeError("ClientSecrets is not started: use 'async with ClientSecrets()'")
        return f"http://{self._host}:{self._server.sockets[0].getsockname()[1]}/v1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, answer = await asyncio.wait_for(self._answer(reader), _TIMEOUT_S)
            body = json.dumps(answer).encode()
            head = (
                f"HTTP/1.1 {status} {_STATUS.get(status, 'Error')}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n"
            )
            writer.write(head.encode() + body)
            await writer.drain()
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            pass  # the client went away or never finished its request: nothing to answer
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader) -> Answer:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.LimitOverrunError, ValueError):
            return _error(413, None, f"The request head is over {MAX_HEAD_BYTES} bytes.")
        request = parse_request_head(head[:-4])
        if isinstance(request, str):
            return _error(400, None, f"Not an HTTP/1.1 request: {request}.")
        return await self._route(request, reader)

    async def _route(self, request: HttpRequest, reader: asyncio.StreamReader) -> Answer:
        if request.path.split("?")[0] != PATH:
            return _error(404, "not_found", f"Invalid URL ({request.method[:10]} "
                          f"{request.path[:200]}): this endpoint is POST {PATH}.")  # fmt: skip
        if request.method != "POST":
            return _error(405, "method_not_allowed", f"Invalid method: use POST {PATH}.")
        length = request.headers.get("content-length", "0")
        if not length.isdigit() or int(length) > MAX_BODY_BYTES:
            return _error(
                413, None, f"Content-Length {length[:20]!r}: expected 0..{MAX_BODY_BYTES}."
            )
        raw = await reader.readexactly(int(length))
        body, problem = read_json(raw) if raw else ({}, None)  # bounded: no deep recursion
        if problem is not None:
            return _error(
                400, None, f"We could not parse the JSON body of your request: {problem}."
            )
        return self.mint(body, request.headers.get("authorization"))


def _ttl(expires_after: object) -> int | str:
    """Seconds a key lives (``expires_after``, or the default), or why it is invalid."""
    if expires_after is None:
        return _DEFAULT_TTL_S
    if not isinstance(expires_after, Mapping) or expires_after.get("anchor", "created_at") != (
        "created_at"
    ):
        return "expires_after must be {'anchor': 'created_at', 'seconds': 10..7200}."
    seconds = expires_after.get("seconds", _DEFAULT_TTL_S)
    if isinstance(seconds, bool) or not isinstance(seconds, int) or not 10 <= seconds <= 7200:
        return f"expires_after.seconds {str(seconds)[:20]} is invalid: expected 10..7200."
    return seconds
