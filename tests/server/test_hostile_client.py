"""A hostile client gets ``error`` events, never a dropped connection: frames that are not UTF-8,
nested too deep or holding an event ``type`` that is not text, and an input-audio flood, which
the 15 MiB buffer bound stops; a bug of the server itself is a ``server_error``. (The seeded fuzz
of every client event is tests/fuzz.)"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from voxwire.server.core.input_buffer import MAX_BUFFER_BYTES
from voxwire.server.core.session import ServerSession

from .helpers import Client, client_of, run, serving

MIB = 1024 * 1024


async def error_for(client: Client, frame: str | bytes) -> dict[str, Any]:
    await client.ws.send(frame)
    (event,) = await client.until("error")
    error: dict[str, Any] = event["error"]
    assert error["type"] == "invalid_request_error"
    return error


def test_unreadable_frames_are_answered_and_the_connection_goes_on() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            error = await error_for(client, b'{"type":"input_audio_buffer.clear","x":"\xff"}')
            assert error["code"] == "invalid_json"
            assert "not UTF-8 text (byte 40 is not): a binary frame?" in error["message"]
            deep = (
                '{"type":"session.update","event_id":"e1","session":{"type":"realtime","x":'
                + "[" * 500
                + "]" * 500
                + "}}"
            )
            error = await error_for(client, deep)
            assert error["code"] == "invalid_value"
            assert "nests deeper than 64 levels" in error["message"]
            error = await error_for(client, '{"type":{"a":1},"event_id":"e2"}')
            assert (error["code"], error["param"], error["event_id"]) == (
                "invalid_type",
                "type",
                "e2",
            )
            assert error["message"] == (
                "Invalid type for 'type': expected a string, but got an object instead."
            )
            await client.say("hello")
            assert (await client.respond())[-1]["response"]["status"] == "completed"

    run(body())


def test_an_input_audio_flood_stops_at_the_buffer_bound() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            chunk = base64.b64encode(bytes(MIB)).decode()
            for _ in range(MAX_BUFFER_BYTES // MIB):
                await client.send({"type": "input_audio_buffer.append", "audio": chunk})
            error = await error_for(
                client,
                '{"type":"input_audio_buffer.append","event_id":"flood","audio":"AAAA"}',
            )
            assert (error["code"], error["param"], error["event_id"]) == (
                "input_audio_buffer_full",
                "audio",
                "flood",
            )
            assert "holds 15728640 bytes and at most 15728640 bytes (15 MiB)" in error["message"]
            # Further appends are dropped without another error (one per overflow): the next
            # error the client sees is the one for a malformed event sent after them.
            for _ in range(20):
                await client.send({"type": "input_audio_buffer.append", "audio": "AAAA"})
            after = await error_for(client, '{"type": {"not": "text"}, "event_id": "bad"}')
            assert after["event_id"] == "bad"
            # A commit empties the buffer: appends are taken again.
            await client.send({"type": "input_audio_buffer.commit"})
            await client.until("conversation.item.done")
            await client.send({"type": "input_audio_buffer.append", "audio": chunk})
            await client.say("hello")
            assert not [e for e in client.received if e["type"] == "error"][2:]

    run(body())


def test_a_server_bug_is_a_server_error_and_the_connection_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    handle = ServerSession.handle

    def failing(self: ServerSession, frame: str | bytes) -> Any:
        if "boom" in str(frame):
            raise RuntimeError("a bug")
        return handle(self, frame)

    monkeypatch.setattr(ServerSession, "handle", failing)

    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            await client.ws.send('{"type":"input_audio_buffer.clear","event_id":"boom"}')
            (event,) = await client.until("error")
            assert event["error"]["type"] == "server_error"
            assert event["error"]["message"].startswith("The server had an error")
            await client.say("hello")
            assert (await client.respond())[-1]["response"]["status"] == "completed"

    run(body())
    assert "failed to answer a client event" in caplog.text
