"""Test a voxwire application without a network: a scripted Realtime server in memory.

:class:`ScriptedServer` plugs into :class:`~voxwire.asyncio.RealtimeSession` through its
``connector`` seam — the session runs exactly as it does over a websocket (same protocol core,
same receive loop, same events), but frames go to and from the script::

    from voxwire.asyncio import RealtimeSession
    from voxwire.testing import ScriptedServer

    async def test_my_agent() -> None:
        server = ScriptedServer()
        async with RealtimeSession(my_agent, connector=server.connect) as session:
            await session.send_message("hi")
            await server.wait_for("response.create")
            await server.text_response("Hello!")
            ...                                  # iterate session, check session.history
        assert server.sent_types()[0] == "session.update"

What the script does by itself (each can be turned off): ``session.created`` when the session
connects; ``session.updated`` echoing each ``session.update``; ``conversation.item.added`` /
``.done`` for each ``conversation.item.create`` (with the client's id and ``previous_item_id``),
and ``conversation.item.deleted`` for each delete. Everything else is up to the test:
:meth:`ScriptedServer.emit` any server event (a mapping or a typed event), or the helpers
:meth:`~ScriptedServer.text_response` / :meth:`~ScriptedServer.audio_response` /
:meth:`~ScriptedServer.function_call_response` that emit a whole GA response (``finish=False``
stops a text response after its deltas, to test what happens mid-response);
:meth:`~ScriptedServer.close` / :meth:`~ScriptedServer.drop` end the connection
cleanly or not; :meth:`~ScriptedServer.refuse_next_connect` makes connecting fail.

:class:`TwilioCallSimulator` (from :mod:`voxwire.telephony.twilio.simulator`) plays Twilio's
side of a phone call against a media stream bridge: a caller's WAV as ``media`` frames, the
bridge's audio into a virtual phone line with a carrier buffer, marks sent back as their audio
plays, ``clear`` honoured, what the caller heard kept (docs/telephony.md).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from voxwire.asyncio.connection.transport import ConnectRequest, TransportClosed
from voxwire.asyncio.errors import ConnectionFailed
from voxwire.protocol.codec import encode_event
from voxwire.protocol.server_events import ServerEvent
from voxwire.telephony.twilio.simulator import LineClear, TwilioCallSimulator

__all__ = ["LineClear", "ScriptedServer", "ScriptedTransport", "TwilioCallSimulator"]


class ScriptedTransport:
    """One scripted connection (a :class:`~voxwire.asyncio.Transport`)."""

    def __init__(self, server: ScriptedServer, request: ConnectRequest) -> None:
        self.request = request
        self._server = server
        self._incoming: deque[str | TransportClosed] = deque()
        self._wakeup = asyncio.Event()
        self.closed = False

    def push(self, item: str | TransportClosed) -> None:
        self._incoming.append(item)
        self._wakeup.set()

    async def send(self, frame: str) -> None:
        if self.closed:
            raise TransportClosed(clean=True, code=1000, reason="closed by the client")
        await self._server._received(self, frame)

    async def recv(self) -> str | bytes:
        while not self._incoming:
            if self.closed:
                raise TransportClosed(clean=True, code=1000, reason="closed by the client")
            self._wakeup.clear()
            await self._wakeup.wait()
        item = self._incoming.popleft()
        if isinstance(item, TransportClosed):
            self.closed = True
            raise item
        return item

    async def close(self) -> None:
        self.closed = True
        self._wakeup.set()


class ScriptedServer:
    """A Realtime server whose behaviour the test scripts; see the module docstring.

    ``sent`` holds every client event the session sent (decoded JSON, in order); ``requests``
    every connection request (URL and headers).
    """

    def __init__(
        self,
        *,
        session_created: bool = True,
        echo_session_updates: bool = True,
        acknowledge_items: bool = True,
    ) -> None:
        self._auto_created = session_created
        self._echo_updates = echo_session_updates
        self._ack_items = acknowledge_items
        self.sent: list[dict[str, Any]] = []
        self.requests: list[ConnectRequest] = []
        self._transport: ScriptedTransport | None = None
        self._refusal: BaseException | None = None
        self._sent_changed: asyncio.Condition | None = None
        self._counter = 0
        self._session: dict[str, Any] = {"type": "realtime", "object": "realtime.session"}
        self._last_item_id: str | None = None

    # --- the connector ----------------------------------------------------------------------------

    async def connect(self, request: ConnectRequest) -> ScriptedTransport:
        """The session's ``connector``."""
        self.requests.append(request)
        if self._refusal is not None:
            refusal, self._refusal = self._refusal, None
            raise refusal
        transport = ScriptedTransport(self, request)
        self._transport = transport
        if self._auto_created:
            transport.push(self._frame({"type": "session.created", "session": self._session}))
        return transport

    def refuse_next_connect(self, error: BaseException | None = None) -> None:
        """Make the next connect fail (default: ``ConnectionFailed``)."""
        self._refusal = error or ConnectionFailed("the scripted server refused the connection")

    @property
    def transport(self) -> ScriptedTransport:
        if self._transport is None:
            raise RuntimeError("no session has connected to this ScriptedServer yet")
        return self._transport

    # --- what the session sent --------------------------------------------------------------------

    def sent_types(self) -> list[str]:
        return [str(event.get("type")) for event in self.sent]

    def sent_of_type(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.sent if event.get("type") == kind]

    async def wait_for(
        self, kind: str, *, count: int = 1, timeout_s: float = 5.0
    ) -> dict[str, Any]:
        """Wait until the session has sent ``count`` events of type ``kind``; the last one."""
        condition = self._condition()

        async def wait() -> dict[str, Any]:
            async with condition:
                await condition.wait_for(lambda: len(self.sent_of_type(kind)) >= count)
                return self.sent_of_type(kind)[count - 1]

        return await asyncio.wait_for(wait(), timeout_s)

    async def _received(self, transport: ScriptedTransport, frame: str) -> None:
        event = json.loads(frame)
        self.sent.append(event)
        self._auto_answer(transport, event)
        condition = self._condition()
        async with condition:
            condition.notify_all()

    def _condition(self) -> asyncio.Condition:
        if self._sent_changed is None:
            self._sent_changed = asyncio.Condition()
        return self._sent_changed

    def _auto_answer(self, transport: ScriptedTransport, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "session.update" and self._echo_updates:
            self._session = {**self._session, **event.get("session", {})}
            transport.push(self._frame({"type": "session.updated", "session": self._session}))
        elif kind == "conversation.item.create" and self._ack_items:
            item = {**event["item"], "status": "completed"}
            item.setdefault("id", self._id("item"))
            previous = event.get("previous_item_id", self._last_item_id)
            self._last_item_id = item["id"]
            for done in ("added", "done"):
                transport.push(
                    self._frame(
                        {
                            "type": f"conversation.item.{done}",
                            "previous_item_id": previous,
                            "item": item,
                        }
                    )
                )
        elif kind == "conversation.item.delete" and self._ack_items:
            transport.push(
                self._frame({"type": "conversation.item.deleted", "item_id": event["item_id"]})
            )

    # --- what the server says ---------------------------------------------------------------------

    async def emit(self, event: Mapping[str, Any] | ServerEvent) -> None:
        """Send one server event (an ``event_id`` is added to mappings that lack one)."""
        if isinstance(event, Mapping):
            self.transport.push(self._frame(dict(event)))
        else:
            self.transport.push(encode_event(event))
        await asyncio.sleep(0)

    async def emit_raw(self, frame: str) -> None:
        """Send a frame as it is (for malformed-input tests)."""
        self.transport.push(frame)
        await asyncio.sleep(0)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """The server closes the connection (1000 / 1001: a clean close)."""
        self.transport.push(TransportClosed(clean=code in (1000, 1001), code=code, reason=reason))
        await asyncio.sleep(0)

    async def drop(self, reason: str = "connection reset") -> None:
        """The connection is lost without a close frame."""
        self.transport.push(TransportClosed(clean=False, code=None, reason=reason))
        await asyncio.sleep(0)

    async def text_response(
        self, text: str, *, chunks: int = 3, status: str = "completed", finish: bool = True
    ) -> str:
        """Emit a whole GA text response saying ``text`` (in ``chunks`` deltas); its id. With
        ``finish=False`` the response stops after its deltas, still in progress."""
        return await self._response("text", text, None, chunks=chunks, status=status, finish=finish)

    async def function_call_response(
        self, calls: Sequence[tuple[str, str, str]], *, response_id: str | None = None
    ) -> str:
        """Emit a whole GA response made of function calls, each ``(call_id, name,
        arguments)`` with its argument delta and done events, in the order the service sends
        them; the response's id."""
        response_id = response_id or self._id("resp")
        response = {"id": response_id, "object": "realtime.response", "status": "in_progress"}
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {**response, "output": []}}
        ]
        done_items = []
        for index, (call_id, name, arguments) in enumerate(calls):
            call_events, done = self._function_call(response_id, index, call_id, name, arguments)
            events += call_events
            done_items.append(done)
        events.append(
            {
                "type": "response.done",
                "response": {**response, "status": "completed", "output": done_items},
            }
        )
        await self._push_all(events)
        return response_id

    def _function_call(
        self, response_id: str, index: int, call_id: str, name: str, arguments: str
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The events of one function call at ``index`` of a response, and its done item."""
        item_id = self._id("item")
        item = {"id": item_id, "object": "realtime.item", "type": "function_call"}
        opened = {**item, "status": "in_progress", "call_id": call_id, "name": name}
        done = {**opened, "status": "completed", "arguments": arguments}
        where = {"response_id": response_id, "item_id": item_id, "output_index": index}
        previous, self._last_item_id = self._last_item_id, item_id
        events: list[dict[str, Any]] = [
            {
                "type": "response.output_item.added",
                "response_id": response_id,
                "output_index": index,
                "item": {**opened, "arguments": ""},
            },
            {
                "type": "conversation.item.added",
                "previous_item_id": previous,
                "item": {**opened, "arguments": ""},
            },
            {
                "type": "response.function_call_arguments.delta",
                **where,
                "call_id": call_id,
                "delta": arguments,
            },
            {
                "type": "response.function_call_arguments.done",
                **where,
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
            },
            {
                "type": "response.output_item.done",
                "response_id": response_id,
                "output_index": index,
                "item": done,
            },
            {"type": "conversation.item.done", "previous_item_id": previous, "item": done},
        ]
        return events, done

    async def audio_response(
        self,
        transcript: str,
        audio: bytes | Sequence[bytes],
        *,
        status: str = "completed",
    ) -> str:
        """Emit a whole GA audio response: ``audio`` (PCM16 bytes, one delta per chunk) with
        ``transcript``; its id."""
        chunks = [audio] if isinstance(audio, bytes) else list(audio)
        return await self._response("audio", transcript, chunks, chunks=1, status=status)

    async def _response(
        self,
        modality: str,
        text: str,
        audio: list[bytes] | None,
        *,
        chunks: int,
        status: str,
        finish: bool = True,
    ) -> str:
        response_id, item_id = self._id("resp"), self._id("item")
        ids = {"response_id": response_id, "item_id": item_id, "output_index": 0}
        part = {"type": "text", "text": ""} if modality == "text" else {"type": "audio"}
        item = {
            "id": item_id,
            "object": "realtime.item",
            "type": "message",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        response = {"id": response_id, "object": "realtime.response", "status": "in_progress"}
        previous, self._last_item_id = self._last_item_id, item_id
        events = [
            {"type": "response.created", "response": {**response, "output": []}},
            *_message_start(ids, previous, part, item),
        ]
        if modality == "text":
            events += _text_deltas(ids, text, chunks)
            if not finish:
                await self._push_all(events)
                return response_id
            events.append(
                {"type": "response.output_text.done", **ids, "content_index": 0, "text": text}
            )
            done_part: dict[str, Any] = {"type": "text", "text": text}
            content = [{"type": "output_text", "text": text}]
        else:
            assert audio is not None
            events += _audio_deltas(ids, text, audio)
            done_part = {"type": "audio", "transcript": text}
            content = [{"type": "output_audio", "transcript": text}]
        done_item = {
            **item,
            "status": "completed" if status == "completed" else "incomplete",
            "content": content,
        }
        events += _message_end(ids, previous, done_part, done_item)
        events.append(
            {
                "type": "response.done",
                "response": {**response, "status": status, "output": [done_item]},
            }
        )
        await self._push_all(events)
        return response_id

    # --- helpers ----------------------------------------------------------------------------------

    def _id(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}_scripted_{self._counter}"

    async def _push_all(self, events: list[dict[str, Any]]) -> None:
        """Deliver ``events`` to the session in order, then let it run."""
        for event in events:
            self.transport.push(self._frame(event))
        await asyncio.sleep(0)

    def _frame(self, event: dict[str, Any]) -> str:
        event.setdefault("event_id", self._id("event"))
        return json.dumps(event)


def _text_deltas(ids: dict[str, Any], text: str, chunks: int) -> list[dict[str, Any]]:
    """``text`` as ``chunks`` ``response.output_text.delta`` events of (nearly) equal size."""
    size = max(1, -(-len(text) // max(1, chunks)))
    return [
        {
            "type": "response.output_text.delta",
            **ids,
            "content_index": 0,
            "delta": text[start : start + size],
        }
        for start in range(0, len(text), size)
    ]


def _audio_deltas(ids: dict[str, Any], text: str, audio: list[bytes]) -> list[dict[str, Any]]:
    """The transcript delta, one audio delta per chunk, and both ``done`` events."""
    at = {**ids, "content_index": 0}
    return [
        {"type": "response.output_audio_transcript.delta", **at, "delta": text},
        *(
            {"type": "response.output_audio.delta", **at, "delta": base64.b64encode(c).decode()}
            for c in audio
        ),
        {"type": "response.output_audio.done", **at},
        {"type": "response.output_audio_transcript.done", **at, "transcript": text},
    ]


def _message_start(
    ids: dict[str, Any], previous: str | None, part: dict[str, Any], item: dict[str, Any]
) -> list[dict[str, Any]]:
    """The output item, conversation item and first part of an assistant message."""
    return [
        {
            "type": "response.output_item.added",
            "response_id": ids["response_id"],
            "output_index": 0,
            "item": item,
        },
        {"type": "conversation.item.added", "previous_item_id": previous, "item": item},
        {"type": "response.content_part.added", **ids, "content_index": 0, "part": part},
    ]


def _message_end(
    ids: dict[str, Any], previous: str | None, part: dict[str, Any], item: dict[str, Any]
) -> list[dict[str, Any]]:
    """The part, output item and conversation item of a finished assistant message."""
    return [
        {"type": "response.content_part.done", **ids, "content_index": 0, "part": part},
        {
            "type": "response.output_item.done",
            "response_id": ids["response_id"],
            "output_index": 0,
            "item": item,
        },
        {"type": "conversation.item.done", "previous_item_id": previous, "item": item},
    ]
