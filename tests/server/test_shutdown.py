"""``voxwire serve`` stops at once on SIGINT or SIGTERM, whatever it is doing.

The server runs as a real subprocess with five clients: one reading a long response still
streaming, one that asked for a response and stopped reading, one idle, one flooding the
input buffer to keep the server busy, and one in a process of its own that is frozen
(SIGSTOP) — a peer that never answers the close frame, as a client on a starved machine.
After the signal the process must exit cleanly (status 0) well within the bound, and every
client that can still read must find a close frame (1001, going away).

The bound is generous for a shared machine (the server's own budget is 0.5 s for the close
handshake and 0.8 s for the whole close) and far below what the frozen peer cost before: the
10 s close timeout of websockets, the cause of the 20 s hangs under load. The frozen peer makes
the slow case happen on any machine, so the test does not need an idle one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from .helpers import Client, pcm_b64, realtime_url, run, start_serve

EXIT_BOUND_S = 3.0
LONG_ANSWER = " ".join(["word"] * 400)  # 80 s at 5 text deltas per second


def _start(tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"rules": [{"match": "talk", "say": LONG_ANSWER}]}))
    process, line = start_serve(
        "--port", "0", "--no-audio", "--scenario", str(scenario), "--text-rate", "5"
    )
    return process, realtime_url(line)


FROZEN_CLIENT = """
import asyncio, sys
from websockets.asyncio.client import connect
async def main():
    async with connect(sys.argv[1]) as ws:
        await ws.recv()
        print("ready", flush=True)
        await asyncio.sleep(3600)
asyncio.run(main())
"""


def _frozen_client(url: str) -> subprocess.Popen[str]:
    client = subprocess.Popen(
        [sys.executable, "-c", FROZEN_CLIENT, url], stdout=subprocess.PIPE, text=True
    )
    assert client.stdout is not None
    assert client.stdout.readline().strip() == "ready"
    client.send_signal(signal.SIGSTOP)
    return client


async def _opened(url: str) -> Client:
    client = Client(await connect(url))
    await client.recv()  # session.created
    updated = await client.update(audio={"input": {"turn_detection": None}})
    assert updated["type"] == "session.updated", updated
    return client


async def _responding(url: str) -> Client:
    client = await _opened(url)
    await client.say("talk to me")
    await client.send({"type": "response.create"})
    await client.until("response.output_text.delta")
    return client


async def _flood(ws: ClientConnection) -> None:
    audio = pcm_b64(2400)
    with contextlib.suppress(ConnectionClosed):
        while True:
            await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": audio}))
            await asyncio.sleep(0)


async def _close_code(ws: ClientConnection) -> int | None:
    with contextlib.suppress(ConnectionClosed):
        while True:
            await asyncio.wait_for(ws.recv(), 5)
    return ws.close_code


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_stops_at_once_with_connections_open_and_a_response_in_flight(
    tmp_path: Path, signum: signal.Signals
) -> None:
    process, url = _start(tmp_path)
    frozen = _frozen_client(url)
    try:

        async def body() -> float:
            reading = await _responding(url)
            stalled = await _responding(url)  # reads nothing more from here on
            idle = await _opened(url)
            busy = await _opened(url)
            flood = asyncio.create_task(_flood(busy.ws))
            await asyncio.sleep(0.2)  # the flood is going and the responses are streaming
            started = time.monotonic()
            process.send_signal(signum)
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(process.wait, 4 * EXIT_BOUND_S)
            elapsed = time.monotonic() - started
            await flood
            codes = [await _close_code(c.ws) for c in (reading, stalled, idle, busy)]
            assert codes == [1001] * 4
            return elapsed

        elapsed = run(body())
    finally:
        frozen.send_signal(signal.SIGCONT)
        frozen.kill()
        frozen.wait(timeout=10)
        if process.poll() is None:
            process.kill()
        _, stderr = process.communicate(timeout=10)
    # Ctrl-C: one line and status 130, as every command; SIGTERM: a clean stop, status 0.
    assert (process.returncode, stderr) == (
        (130, "voxwire serve: interrupted\n") if signum == signal.SIGINT else (0, "")
    )
    assert elapsed < EXIT_BOUND_S, f"exit took {elapsed:.2f} s"
    assert "Traceback" not in stderr, stderr
