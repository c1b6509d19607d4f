"""(d) The HTTP side never fails on what a client sends: seeded mutations of real requests to
every listener of the local server and the telephony helpers, over loopback sockets.

Targets: the websocket handshake of ``RealtimeServer`` (with a token: ``Authorization`` and the
key subprotocol), the client secrets endpoint, the SIP trunk's REST routes (accept, reject,
refer), the Twilio webhook (``PhoneServer``, GET and POST, with signatures checked) and the
incoming-call ``WebhookApp`` under uvicorn. Each hostile request (``http_mutations.py``: non-ASCII
bytes in headers, target and body, lying Content-Length, bodies nested thousands deep, cut
requests) gets an HTTP answer that is not a 5xx, or the connection closed; nothing is logged as
an error (no traceback); and a clean request is served after all of them. The request bodies are
also fed to the sans-I/O cores (``CallBook.handle``, ``verify_webhook``) frame by frame.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import random
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.telephony.conftest import SECRET, serving_asgi
from voxwire.agents import RealtimeAgent
from voxwire.exceptions import CallControlError, ConnectionFailed, WebhookError
from voxwire.protocol.sip import sign_webhook, verify_webhook
from voxwire.server import RealtimeServer
from voxwire.server.client_secrets import ClientSecrets
from voxwire.server.core.calls import CallBook
from voxwire.server.live.core.config import start_problem
from voxwire.server.sip import SipTrunk
from voxwire.telephony import WebhookApp
from voxwire.telephony.sip import SipCalls
from voxwire.telephony.twilio import PhoneServer, TwilioBridge, twilio_signature
from voxwire.web import mint_client_secret

from .conftest import CASES
from .http_mutations import Request, mutate_body, mutate_request

BASE_SEED = int(os.environ.get("VOXWIRE_FUZZ_SEED", "19"))
REQUESTS_PER_TARGET = int(os.environ.get("VOXWIRE_FUZZ_HTTP", "120"))
CORE_BODIES = int(os.environ.get("VOXWIRE_FUZZ_HTTP_CORE", "3000"))
TOKEN = "sk-local-token"
TWILIO_TOKEN = "twilio-auth-token"
NOW = 1_700_000_000

SESSION = {
    "type": "realtime",
    "instructions": "Be brief.",
    "audio": {"input": {"format": {"type": "audio/pcmu"}, "turn_detection": None}},
    "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
}


class ErrorLog(logging.Handler):
    """Every record at ERROR or above, from any logger (a traceback in the server's log)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass
class Target:
    name: str
    port: int
    requests: list[Request]  # clean requests the mutations start from
    clean: Callable[[], Request]  # a clean request that must get a 2xx (or 101) at the end


async def exchange(port: int, data: bytes, timeout_s: float = 10.0) -> bytes:
    """Send ``data`` on a fresh connection and read the answer. A websocket handshake (GET) gets
    its answer's head only (a 101 leaves the connection open); any other request ends the
    sending side, so a request cut short is seen as such, and is read until EOF."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        if not data.startswith(b"GET ") or b"\r\n\r\n" not in data:
            writer.write_eof()
            return await asyncio.wait_for(reader.read(), timeout_s)
        return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout_s)
    except (ConnectionError, asyncio.IncompleteReadError):
        return b""  # the server cut a request it refused to read (a head over its bound)
    finally:
        writer.close()


def status_of(answer: bytes) -> int | None:
    if not answer:
        return None
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]
    return int(answer[9:12])


def handshake(target: bytes, headers: tuple[tuple[bytes, bytes], ...]) -> Request:
    upgrade = (
        (b"Host", b"127.0.0.1"),
        (b"Upgrade", b"websocket"),
        (b"Connection", b"Upgrade"),
        (b"Sec-WebSocket-Key", b"dGhlIHNhbXBsZSBub25jZQ=="),
        (b"Sec-WebSocket-Version", b"13"),
    )
    return Request(b"GET", target, upgrade + headers)


def post(target: bytes, body: object, *headers: tuple[bytes, bytes]) -> Request:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Request(b"POST", target, ((b"Host", b"127.0.0.1"), *headers), data)


def twilio_post(port: int) -> Request:
    form = {"CallSid": "CA123", "From": "15550100"}
    body = "&".join(f"{k}={v}" for k, v in form.items()).encode()
    url = f"https://127.0.0.1:{port}/twiml"
    sig = twilio_signature(TWILIO_TOKEN, url, form).encode()
    headers = ((b"Host", f"127.0.0.1:{port}".encode()), (b"X-Twilio-Signature", sig))
    return Request(b"POST", b"/twiml", headers, body)


def webhook_post() -> Request:
    event = {
        "object": "event",
        "id": "evt_1",
        "type": "realtime.call.incoming",
        "created_at": NOW,
        "data": {"call_id": "rtc_1", "sip_headers": [{"name": "From", "value": "x"}]},
    }
    body = json.dumps(event).encode()
    signed = sign_webhook(body, secret=SECRET, webhook_id="wh_1", timestamp_s=int(time.time()))
    headers = tuple((k.encode(), v.encode()) for k, v in signed.items())
    return Request(b"POST", b"/", ((b"Host", b"127.0.0.1"), *headers), body)


@asynccontextmanager
async def targets() -> AsyncIterator[list[Target]]:
    async def ok(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    async def on_call(event: object) -> None:
        return None

    async with AsyncExitStack() as stack:
        server = await stack.enter_async_context(
            RealtimeServer(tts=None, transcriber=None, token=TOKEN)
        )
        keys = await stack.enter_async_context(ClientSecrets(token=TOKEN))
        hook = await stack.enter_async_context(serving_asgi(ok))
        trunk = await stack.enter_async_context(SipTrunk(server, webhook_url=hook, secret=SECRET))
        phone = await stack.enter_async_context(
            PhoneServer(TwilioBridge(RealtimeAgent(name="a")), auth_token=TWILIO_TOKEN)
        )
        app = WebhookApp(SECRET, on_call)
        webhook = await stack.enter_async_context(serving_asgi(app))
        calls = [(await trunk.call()).call_id for _ in range(3)]
        auth = (b"Authorization", b"Bearer " + TOKEN.encode())
        port_of = {"keys": keys.base_url, "trunk": trunk.api_base_url, "webhook": webhook}
        ports = {k: int(v.split(":")[2].split("/")[0]) for k, v in port_of.items()}
        key_protocol = (
            b"Sec-WebSocket-Protocol",
            b"realtime, openai-insecure-api-key." + TOKEN.encode(),
        )
        yield [
            Target(
                "realtime handshake",
                server.port,
                [
                    handshake(b"/v1/realtime?model=gpt-realtime", (auth,)),
                    handshake(b"/v1/realtime?model=gpt-realtime", (key_protocol,)),
                    handshake(b"/v1/live/sessions", (auth,)),
                    handshake(b"/v1/realtime?call_id=" + calls[0].encode(), (auth,)),
                ],
                lambda: handshake(b"/v1/realtime?model=gpt-realtime", (auth,)),
            ),
            Target(
                "client secrets",
                ports["keys"],
                [post(b"/v1/realtime/client_secrets", {"session": SESSION}, auth)],
                lambda: post(b"/v1/realtime/client_secrets", {"session": SESSION}, auth),
            ),
            Target(
                "sip rest",
                ports["trunk"],
                [
                    post(f"/v1/realtime/calls/{call}/{action}".encode(), body, auth)
                    for call in calls
                    for action, body in (
                        ("accept", SESSION),
                        ("reject", {"status_code": 486}),
                        ("refer", {"target_uri": "tel:+15550100"}),
                    )
                ],
                lambda: post(b"/v1/realtime/calls/rtc_nope/hangup", b"", auth),
            ),
            Target(
                "twilio webhook",
                phone.port,
                [twilio_post(phone.port), handshake(b"/twiml?CallSid=CA1", ())],
                lambda: twilio_post(phone.port),
            ),
            Target("call webhook app", ports["webhook"], [webhook_post()], webhook_post),
        ]
        await app.aclose()


CLEAN_STATUS = {"sip rest": 404}  # the clean probe asks for an unknown call: a JSON 404


def test_every_http_listener_answers_hostile_requests() -> None:
    rng = random.Random(BASE_SEED * 1000 + 300)
    errors = ErrorLog()
    root = logging.getLogger()
    root.addHandler(errors)

    async def body() -> None:
        async with targets() as listeners:
            for target in listeners:
                for _ in range(REQUESTS_PER_TARGET):
                    kind, data = mutate_request(rng.choice(target.requests), rng)
                    status = status_of(await exchange(target.port, data))
                    assert status is None or status < 500, (target.name, kind, data[:300])
                    CASES[f"http requests: {kind}"] += 1
                status = status_of(await exchange(target.port, target.clean().encode()))
                assert status is not None
                assert status == CLEAN_STATUS.get(target.name, status)
                assert status < 300 or target.name in CLEAN_STATUS, (target.name, status)

    try:
        asyncio.run(asyncio.wait_for(body(), 120))
    finally:
        root.removeHandler(errors)
    logged = [(r.name, r.getMessage()[:200], r.exc_info) for r in errors.records]
    assert not logged, logged


@pytest.mark.parametrize("chunk", range(2))
def test_rest_and_webhook_bodies_never_raise_in_the_cores(chunk: int) -> None:
    """``CallBook.handle`` answers every body; ``verify_webhook`` of a correctly signed hostile
    body raises only ``WebhookError``."""
    rng = random.Random(BASE_SEED * 1000 + 310 + chunk)
    bases = [
        post(b"/accept", SESSION),
        post(b"/refer", {"target_uri": "sip:a@b"}),
        post(b"/reject", {"status_code": 603}),
        webhook_post(),
    ]
    book = CallBook(start_problem)
    for case in range(CORE_BODIES // 2):
        base = rng.choice(bases)
        kind, body = mutate_body(base, rng)
        call_id = f"rtc_{case}"
        book.ring(call_id, [])
        for action in ("accept", "reject", "refer", "hangup"):
            answer = book.handle("POST", f"/v1/realtime/calls/{call_id}/{action}", body)
            assert answer.status in (200, 400, 404, 405, 413)
            json.dumps(answer.body)
        headers = sign_webhook(body, secret=SECRET, webhook_id="wh", timestamp_s=NOW)
        with contextlib.suppress(WebhookError):
            verify_webhook(headers, body, SECRET, now_s=NOW)
        CASES[f"rest and webhook bodies: {kind}"] += 1


def test_header_values_that_are_not_ascii_are_refused_not_crashed() -> None:
    """Regression: a key, signature or call id of non-ASCII bytes made the handshake answer 500
    (UnicodeEncodeError / TypeError in hmac) and the Twilio POST close without an answer; now
    a handshake with a header value past ASCII is a 400 saying so, a POST's signature a 403."""
    errors = ErrorLog()
    logging.getLogger().addHandler(errors)
    odd = b"\xe9\xff"

    async def body() -> None:
        async with targets() as listeners:
            by_name = {t.name: t for t in listeners}
            realtime = by_name["realtime handshake"].port
            twilio = by_name["twilio webhook"].port
            for request, port, expected in [
                (
                    handshake(b"/v1/realtime", ((b"Authorization", b"Bearer " + odd),)),
                    realtime,
                    400,
                ),
                (
                    handshake(
                        b"/v1/realtime",
                        ((b"Sec-WebSocket-Protocol", b"openai-insecure-api-key." + odd),),
                    ),
                    realtime,
                    400,
                ),
                (handshake(b"/twiml?CallSid=" + odd, ((b"X-Twilio-Signature", odd),)), twilio, 400),
                (handshake(b"/twiml?CallSid=" + odd, ()), twilio, 403),
                (
                    handshake(
                        b"/v1/realtime?model=gpt-" + odd,
                        ((b"Authorization", b"Bearer " + TOKEN.encode()), (b"User-Agent", odd)),
                    ),
                    realtime,
                    101,
                ),
                (
                    Request(
                        b"POST",
                        b"/twiml",
                        ((b"Host", odd), (b"X-Twilio-Signature", odd)),
                        b"CallSid=" + odd,
                    ),
                    twilio,
                    403,
                ),
            ]:
                assert status_of(await exchange(port, request.encode())) == expected

    try:
        asyncio.run(asyncio.wait_for(body(), 60))
    finally:
        logging.getLogger().removeHandler(errors)
    assert not errors.records, [(r.name, r.getMessage(), r.exc_info) for r in errors.records]


def test_bodies_nested_deep_or_not_utf8_are_a_clear_400() -> None:
    """Regression: msgspec raised RecursionError / UnicodeDecodeError out of the REST core and
    the webhook verifier, and json.loads RecursionError out of the client secrets endpoint."""
    deep = ("[" * 5000 + "]" * 5000).encode()
    book = CallBook(start_problem)
    for index, body in enumerate([deep, b'{"type": "realtime", "x": "\xff"}']):
        book.ring(f"rtc_{index}", [])
        answer = book.handle("POST", f"/v1/realtime/calls/rtc_{index}/accept", body)
        assert answer.status == 400
        assert answer.body is not None
        assert answer.body["error"]["code"] == "invalid_json"
        headers = sign_webhook(body, secret=SECRET, webhook_id="wh", timestamp_s=NOW)
        with pytest.raises(WebhookError, match="not JSON") as caught:
            verify_webhook(headers, body, SECRET, now_s=NOW)
        assert caught.value.reason == "malformed"
    with pytest.raises(WebhookError):  # a header given as text with a lone surrogate
        verify_webhook(
            {
                "webhook-id": "\ud800",
                "webhook-timestamp": str(NOW),
                "webhook-signature": "v1," + base64.b64encode(b"x" * 32).decode(),
            },
            b"{}",
            SECRET,
            now_s=NOW,
        )

    async def endpoint() -> None:
        async with ClientSecrets() as keys:
            port = int(keys.base_url.split(":")[2].split("/")[0])
            request = post(b"/v1/realtime/client_secrets", deep)
            answer = await exchange(port, request.encode())
            assert status_of(answer) == 400
            error = json.loads(answer.partition(b"\r\n\r\n")[2])["error"]
            assert "nests deeper than 64 levels" in error["message"]

    asyncio.run(endpoint())


def test_an_answer_nested_deep_is_a_connection_failure_of_the_minting_client() -> None:
    """Regression: ``mint_client_secret`` read the endpoint's answer with json.loads, so an
    answer nested thousands deep raised RecursionError out of it."""
    deep = b"[" * 5000 + b"]" * 5000

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(deep)}\r\nConnection: close\r\n\r\n"
        writer.write(head.encode() + deep)
        await writer.drain()
        writer.close()

    async def body() -> None:
        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            with pytest.raises(ConnectionFailed, match="answered 200"):
                await mint_client_secret(
                    RealtimeAgent(name="a"), api_key="k", base_url=f"http://127.0.0.1:{port}/v1"
                )

    asyncio.run(body())


def test_an_error_answer_nested_deep_is_a_call_control_error() -> None:
    """Regression: ``SipCalls`` read an error answer with ``response.json()``, whose
    RecursionError on a body nested thousands deep was not caught. (The hosted REST endpoint is
    mocked: httpx's MockTransport.)"""
    deep = b"[" * 5000 + b"]" * 5000

    async def body() -> None:
        transport = httpx.MockTransport(lambda request: httpx.Response(400, content=deep))
        async with httpx.AsyncClient(transport=transport) as http:
            calls = SipCalls(api_key="k", base_url="https://api.example/v1", http_client=http)
            with pytest.raises(CallControlError, match="HTTP 400") as caught:
                await calls.hangup("rtc_1")
            assert caught.value.status == 400

    asyncio.run(body())


def test_only_the_clients_handshake_failures_lose_their_traceback() -> None:
    """websockets' "opening handshake failed" about a malformed request becomes one warning
    line; the same record about an exception of the server's own code keeps its traceback."""
    from websockets.exceptions import InvalidMessage

    from voxwire.logs import ClientHandshakeFailures

    def record(exc: BaseException) -> logging.LogRecord:
        try:
            raise exc
        except BaseException:
            import sys

            info = sys.exc_info()
        return logging.LogRecord(
            "w", logging.ERROR, __file__, 1, "opening handshake failed", (), info
        )

    client = record(InvalidMessage("did not receive a valid HTTP request"))
    ours = record(ValueError("a bug of the server"))
    keep = ClientHandshakeFailures()
    assert keep.filter(client)
    assert keep.filter(ours)
    assert (client.levelno, client.exc_info) == (logging.WARNING, None)
    assert "did not receive a valid HTTP request" in client.getMessage()
    assert ours.levelno == logging.ERROR
    assert ours.exc_info is not None
