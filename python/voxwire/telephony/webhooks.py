"""The incoming-call webhooks (``realtime.call.incoming``; GPT-Live's ``live.transport.incoming``):
verify them, parse them, and a small ASGI app for them.

:func:`verify` is framework-agnostic: give it the request's headers, its raw body (the bytes as
received — parsing and re-encoding the JSON first breaks the signature) and the ``whsec_…``
secret; it returns the typed event or raises :class:`~voxwire.exceptions.WebhookError` (forged,
stale or malformed, with ``reason``). The checks are the Standard Webhooks scheme the hosted
service signs with; see :mod:`voxwire.protocol.sip` for each rule and where it comes from.

:class:`WebhookApp` is the common case as an ASGI application (no framework: run it with any ASGI
server, e.g. ``uvicorn module:app``, or mount it in one): it answers ``200`` at once to a verified
call, ``400`` to a refused request (and says why), ignores a delivery it already answered (the
service retries with the same ``webhook-id``), and runs ``on_call(event)`` as a task it owns —
accepting the call and running its session happens after the webhook has been answered. A call
for GPT-Live runs ``on_live_call(event)`` (:class:`~voxwire.protocol.sip.LiveCallIncoming`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final, TypeAlias

from voxwire.exceptions import WebhookError
from voxwire.protocol.sip import (
    MAX_WEBHOOK_BYTES,
    WEBHOOK_TOLERANCE_S,
    Headers,
    LiveCallIncoming,
    RealtimeCallIncoming,
    WebhookEvent,
    verify_webhook,
    webhook_key,
)

__all__ = ["CallHandler", "LiveCallHandler", "WebhookApp", "verify"]

log = logging.getLogger("voxwire.telephony")

Scope: TypeAlias = MutableMapping[str, Any]
Message: TypeAlias = MutableMapping[str, Any]
Receive: TypeAlias = Callable[[], Awaitable[Message]]
Send: TypeAlias = Callable[[Message], Awaitable[None]]
CallHandler: TypeAlias = Callable[[RealtimeCallIncoming], "Awaitable[None] | None"]
LiveCallHandler: TypeAlias = Callable[[LiveCallIncoming], "Awaitable[None] | None"]
_REMEMBERED_IDS: Final = 4096


def verify(
    headers: Headers,
    body: bytes | str,
    secret: str,
    *,
    tolerance_s: float = WEBHOOK_TOLERANCE_S,
    now_s: float | None = None,
) -> RealtimeCallIncoming | LiveCallIncoming | WebhookEvent:
    """Verify a webhook request and return its event (:class:`RealtimeCallIncoming` for an
    incoming call, :class:`LiveCallIncoming` for one to GPT-Live, :class:`WebhookEvent` for any
    other type). ``headers``: a mapping (any case)
    or ``(name, value)`` pairs (ASGI's bytes pairs too); ``now_s`` defaults to the clock."""
    now = time.time() if now_s is None else now_s
    return verify_webhook(headers, body, secret, now_s=now, tolerance_s=tolerance_s)


class WebhookApp:
    """An ASGI app answering the incoming-call webhook (see the module docstring)."""

    def __init__(
        self,
        secret: str,
        on_call: CallHandler | None = None,
        *,
        on_live_call: LiveCallHandler | None = None,
        tolerance_s: float = WEBHOOK_TOLERANCE_S,
    ) -> None:
        webhook_key(secret)  # checked now: a wrong secret is a setup error, not a 400 later
        if on_call is None and on_live_call is None:
            raise ValueError(
                "WebhookApp needs on_call (Realtime calls), on_live_call (GPT-Live calls) or both"
            )
        self._secret, self._on_call, self._tolerance_s = secret, on_call, tolerance_s
        self._on_live_call = on_live_call
        self._seen: OrderedDict[str, None] = OrderedDict()
        self.tasks: set[asyncio.Task[None]] = set()
        self.refused: list[WebhookError] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":
            await respond_json(send, 405, {"error": "use POST: this endpoint takes webhooks"})
            return
        body = await _read_body(receive)
        if body is None:
            await respond_json(send, 413, {"error": f"body over {MAX_WEBHOOK_BYTES} bytes"})
            return
        try:
            event = verify(scope["headers"], body, self._secret, tolerance_s=self._tolerance_s)
        except WebhookError as exc:
            self.refused.append(exc)
            log.warning("webhook refused (%s): %s", exc.reason, exc)
            await respond_json(send, 400, {"error": str(exc), "reason": exc.reason})
            return
        first = self._remember(event.webhook_id)
        await respond_json(send, 200, {"ok": True})
        handler: Callable[[Any], Awaitable[None] | None] | None = None
        if isinstance(event, RealtimeCallIncoming):
            handler = self._on_call
        elif isinstance(event, LiveCallIncoming):
            handler = self._on_live_call
        if first and handler is not None:
            assert not isinstance(event, WebhookEvent)
            task = asyncio.create_task(
                self._run(handler, event), name=f"voxwire-call-{event.call_id}"
            )
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    def _remember(self, webhook_id: str) -> bool:
        if webhook_id in self._seen:
            return False
        self._seen[webhook_id] = None
        while len(self._seen) > _REMEMBERED_IDS:
            self._seen.popitem(last=False)
        return True

    async def _run(
        self,
        handler: Callable[[Any], Awaitable[None] | None],
        event: RealtimeCallIncoming | LiveCallIncoming,
    ) -> None:
        try:
            result = handler(event)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("the call handler failed for call %s", event.call_id)

    async def aclose(self) -> None:
        """Cancel the running call handlers and wait for them (ASGI shutdown does this too)."""
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def wait_calls(self) -> None:
        """Wait until every call handler started so far has returned."""
        while self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _read_body(receive: Receive) -> bytes | None:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return bytes(body)
        body += message.get("body", b"")
        if len(body) > MAX_WEBHOOK_BYTES:
            return None
        if not message.get("more_body", False):
            return bytes(body)


async def respond_json(send: Send, status: int, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
