"""Concurrent real-time sessions against one local server process.

    pytest benches/test_bench_server.py -s                  # 50 sessions
    VOXWIRE_BENCH_SESSIONS=200 pytest benches/test_bench_server.py -s

The server runs as ``voxwire serve --pace 1`` in its own process, pinned to one core with
``os.sched_setaffinity`` where the platform has it; the clients run here. Every session asks
for the same spoken answer (about 1.2 s of 24 kHz audio, streamed in 100 ms deltas at real
time). A delta is *late* if it arrives after the audio before it would have finished playing
from a 100 ms jitter buffer started at the session's first delta — the moment a client's
playback would underrun. The suite fails if more than 5 % of deltas are late.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import statistics
import subprocess
import sys
import time

from websockets.asyncio.client import connect

SESSIONS = int(os.environ.get("VOXWIRE_BENCH_SESSIONS", "50"))
JITTER_BUFFER_S = 0.1
BYTES_PER_S = 24_000 * 2


async def _session(url: str, start: asyncio.Event) -> tuple[int, int, float]:
    """(deltas, late deltas, worst lateness in s) of one spoken response."""
    async with connect(url, max_size=None, open_timeout=60) as ws:
        await ws.recv()  # session.created
        await ws.send(
            json.dumps(
                {
                    "type": "conversation.item.create",
                    "item": {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "hello"}],
                    },
                }
            )
        )
        await start.wait()
        await ws.send(json.dumps({"type": "response.create"}))
        first: float | None = None
        audio_s = 0.0
        deltas = late = 0
        worst = 0.0
        while True:
            event = json.loads(await ws.recv())
            if event["type"] == "response.output_audio.delta":
                now = time.perf_counter()
                first = now if first is None else first
                lateness = now - (first + JITTER_BUFFER_S + audio_s)
                deltas += 1
                if lateness > 0:
                    late += 1
                    worst = max(worst, lateness)
                audio_s += len(base64.b64decode(event["delta"])) / BYTES_PER_S
            elif event["type"] == "response.done":
                return deltas, late, worst


async def _run(url: str) -> list[tuple[int, int, float]]:
    start = asyncio.Event()
    tasks = [asyncio.create_task(_session(url, start)) for _ in range(SESSIONS)]
    await asyncio.sleep(0.5 + SESSIONS * 0.01)  # all connected and waiting
    start.set()
    return await asyncio.gather(*tasks)


def test_concurrent_real_time_sessions() -> None:
    command = [sys.executable, "-m", "voxwire.cli", "serve", "--port", "0", "--pace", "1"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(server.pid, {0})
        assert server.stdout is not None
        match = re.search(r"(ws://\S+/v1/realtime)", server.stdout.readline())
        assert match
        started = time.perf_counter()
        results = asyncio.run(_run(match.group(1) + "?model=gpt-realtime"))
        elapsed = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(timeout=30)
    deltas = sum(r[0] for r in results)
    late = sum(r[1] for r in results)
    worst = max(r[2] for r in results)
    median_deltas = statistics.median(r[0] for r in results)
    print(
        f"\n{SESSIONS} sessions, server on one core: {deltas} audio deltas "
        f"({median_deltas:.0f} per session), {late} late ({late / deltas:.2%}), "
        f"worst {worst * 1000:.0f} ms late, {elapsed:.1f} s"
    )
    assert late / deltas < 0.05
