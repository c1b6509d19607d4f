"""The official ``openai`` client connects unchanged and completes a text turn and an audio turn.

Only ``websocket_base_url`` points it here (``AsyncOpenAI(api_key=…,
websocket_base_url="ws://127.0.0.1:PORT/v1")``); everything else is the client as shipped.
"""

from __future__ import annotations

import base64
from typing import Any

from openai import AsyncOpenAI

from .helpers import run, serving


async def _turn(connection: Any, **response: Any) -> list[Any]:
    if response:
        await connection.response.create(response=response)
    else:
        await connection.response.create()
    events = []
    async for event in connection:
        events.append(event)
        if event.type == "response.done":
            return events
    raise AssertionError("connection closed before response.done")


def test_official_client_text_and_audio_turns() -> None:
    async def body() -> None:
        async with serving(token="sk-local") as server:
            client = AsyncOpenAI(api_key="sk-local", websocket_base_url=server.base_url)
            async with client.realtime.connect(model="gpt-realtime") as connection:
                first = await connection.recv()
                assert first.type == "session.created"
                await connection.session.update(
                    session={"type": "realtime", "output_modalities": ["text"]}
                )
                updated = await connection.recv()
                assert updated.type == "session.updated"
                assert updated.session.output_modalities == ["text"]

                await connection.conversation.item.create(
                    item={
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "hello"}],
                    }
                )
                events = await _turn(connection)
                text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
                assert text == "Hello! How can I help you today?"
                assert events[-1].response.status == "completed"
                assert events[-1].response.usage.total_tokens > 0

                events = await _turn(connection, output_modalities=["audio"])
                audio = b"".join(
                    base64.b64decode(e.delta)
                    for e in events
                    if e.type == "response.output_audio.delta"
                )
                transcript = next(
                    e.transcript
                    for e in events
                    if e.type == "response.output_audio_transcript.done"
                )
                assert transcript == "Hello! How can I help you today?"
                assert len(audio) > 24_000 * 2 // 2  # more than half a second of 24 kHz PCM16
                assert events[-1].response.status == "completed"

            await client.close()

    run(body())
