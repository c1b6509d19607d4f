"""How long the local server's semantic_vad waits after speech before ending the turn.

    python benches/semantic_vad_pauses.py

For each eagerness, a finished question ("Can you help me?", the server's espeak-ng voice) and
the same speech cut off at its loudest 20 ms frame in the middle (as when a speaker stops
mid-word) are streamed to a local server over a loopback websocket, followed by silence. The
pause is measured on the input timeline (``speech_stopped``'s ``audio_end_ms`` minus where the
voice ends), so the figures do not depend on the machine's speed; they include the VAD's own
hangover. Printed as a Markdown table for benches/RESULTS.md.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import numpy as np
from websockets.asyncio.client import ClientConnection, connect

from voxwire.server import RealtimeServer
from voxwire.server.engines.tts import Voice

RATE_HZ = 24_000
FRAME = RATE_HZ // 50  # 20 ms
LEAD_MS, TRAIL_MS = 400, 9000


def speech() -> tuple[bytes, bytes]:
    """A finished question and the same speech cut off at its loudest middle frame."""
    voice = Voice.load("espeak")
    try:
        pcm = voice.speak_blocking("Can you help me?", "alloy", 1.0, "audio/pcm").audio
    finally:
        voice.close()
    samples = np.frombuffer(pcm, dtype="<i2")
    energy = [
        float(np.mean(samples[i : i + FRAME].astype(np.float64) ** 2))
        for i in range(0, len(samples) - FRAME, FRAME)
    ]
    loudest = max(range(len(energy) // 3, 2 * len(energy) // 3), key=energy.__getitem__)
    return pcm, samples[: (loudest + 1) * FRAME].tobytes()


def voice_end_ms(pcm: bytes) -> int:
    loud = np.flatnonzero(np.abs(np.frombuffer(pcm, dtype="<i2").astype(np.int32)) > 200)
    return int(loud[-1]) * 1000 // RATE_HZ


async def until(ws: ClientConnection, kind: str) -> dict[str, Any]:
    while True:
        event: dict[str, Any] = json.loads(await ws.recv())
        if event["type"] == kind:
            return event
        if event["type"] == "error":
            raise RuntimeError(f"the server refused a request: {event['error']['message']}")


async def pause_ms(ws: ClientConnection, pcm: bytes, at_ms: int) -> tuple[int, int]:
    """The pause after the voice in ``pcm``, and the input timeline's length afterwards."""
    audio = bytes(LEAD_MS * RATE_HZ // 500) + pcm + bytes(TRAIL_MS * RATE_HZ // 500)
    for start in range(0, len(audio), FRAME * 2 * 5):  # 100 ms appends
        chunk = base64.b64encode(audio[start : start + FRAME * 2 * 5]).decode()
        await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))
    stopped = await until(ws, "input_audio_buffer.speech_stopped")
    ends_ms = at_ms + LEAD_MS + voice_end_ms(pcm)
    return int(stopped["audio_end_ms"]) - ends_ms, at_ms + len(audio) * 1000 // (2 * RATE_HZ)


async def measure() -> dict[str, tuple[int, int]]:
    finished, cut = speech()
    pauses = {}
    async with RealtimeServer(tts=None) as server:
        for eagerness in ("high", "medium", "low"):
            async with connect(server.url()) as ws:
                await until(ws, "session.created")
                detection = {
                    "type": "semantic_vad",
                    "eagerness": eagerness,
                    "create_response": False,
                }
                update = {
                    "type": "realtime",
                    "output_modalities": ["text"],
                    "audio": {"input": {"turn_detection": detection}},
                }
                await ws.send(json.dumps({"type": "session.update", "session": update}))
                await until(ws, "session.updated")
                done_ms, at_ms = await pause_ms(ws, finished, 0)
                cut_ms, _ = await pause_ms(ws, cut, at_ms)
                pauses[eagerness] = (done_ms, cut_ms)
    return pauses


def main() -> None:
    pauses = asyncio.run(measure())
    print("| eagerness | finished question | the same speech cut off |")
    print("|---|---:|---:|")
    for eagerness, (done_ms, cut_ms) in pauses.items():
        print(f"| {eagerness} | {done_ms} ms | {cut_ms} ms |")


if __name__ == "__main__":
    main()
