"""Shared pieces of the SIP tests: a webhook app served by uvicorn on loopback, the official
types every REST body is checked against, and the caller's speech (the server's own voice)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cache
from typing import Any

import numpy as np
import pydantic
import uvicorn
from openai.types.realtime import CallAcceptParams, CallReferParams, CallRejectParams

from voxwire.server.engines.tts import Voice
from voxwire.server.phone import Speak

SECRET = "whsec_" + base64.b64encode(b"voxwire-test-webhook-secret-0001").decode()
OFFICIAL_BODIES: dict[str, Any] = {
    "accept": CallAcceptParams,
    "reject": CallRejectParams,
    "refer": CallReferParams,
}


def check_official_body(action: str, body: bytes) -> None:
    """A REST body validates as the official params type, with no key it does not define."""
    if action == "hangup":
        assert body in (b"", b"null", b"{}"), body
        return
    params = OFFICIAL_BODIES[action]
    raw = pydantic.TypeAdapter(dict[str, Any]).validate_json(body or b"{}")
    unknown = set(raw) - set(params.__annotations__)
    assert not unknown, f"{action} body has keys the official type does not define: {unknown}"
    pydantic.TypeAdapter(params).validate_python(raw, strict=False)


@cache
def speech_pcm() -> tuple[bytes, int]:
    voice = Voice.load()
    try:
        spoken = voice.speak_blocking(
            "Hello, I would like to check my account.", "alloy", 1.0, "audio/pcm"
        )
    finally:
        voice.close()
    return spoken.audio, 24_000


def caller_speech() -> Speak:
    audio, rate_hz = speech_pcm()
    return Speak(np.frombuffer(audio, dtype="<i2").astype(np.int16), rate_hz)


@asynccontextmanager
async def serving_asgi(app: Any) -> AsyncIterator[str]:
    """``app`` under uvicorn on 127.0.0.1; yields its base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
