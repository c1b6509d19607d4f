"""Client CPU of a LiveSession with an audio output, one scripted conversation, as fast as the
client reads: what the session's receive path and audio path cost per frame.

    python benches/live_session_cpu.py --runs 5
    python benches/live_session_cpu.py --runs 5 --compare /path/to/other/checkout/python

A scripted Live server (plain websockets, its own process) answers ``session.start`` and then
plays ``--turns`` turns: the user's transcript (1.5 s of speech on the session timeline), then
3 s of the model's audio (30 deltas of 100 ms PCM16 at 24 kHz, placed on the timeline) with a
transcript word every third delta, then 50 ms of quiet before the next turn. The client is a
``LiveSession`` (``voxwire.asyncio.live``) with an ``AudioOutput`` pulled by a listener thread
(20 ms buffers, as fast as audio is queued), so every word is released as heard and every
utterance ends before the next turn. CPU is ``resource.getrusage`` of the client process (user
+ system, the listener thread included) from before ``connect`` to after the ``close`` event.

``--compare PATH`` runs the same client with ``PYTHONPATH=PATH`` too, alternating, to compare
two versions of voxwire on one machine in one run (benches/RESULTS.md).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

RATE_HZ = 24_000
DELTA_MS = 100
PCM = bytes((n * 37) % 256 for n in range(RATE_HZ * 2 * DELTA_MS // 1000))
SESSION = {
    "id": "sess_bench",
    "expires_at": 1_900_000_000,
    "model": "gpt-live-1",
    "status": "active",
    "audio": {"format": {"type": "audio/pcm", "rate": RATE_HZ}, "output": {"voice": "marin"}},
    "delegation": {"type": "responses", "responses": {"model": "gpt-5.5"}},
}


def script(turns: int) -> list[list[str]]:
    """The frames of each turn, encoded once."""
    audio = base64.b64encode(PCM).decode()
    out: list[list[str]] = []
    for turn in range(turns):
        base = turn * 10_000
        frames = [
            json.dumps(
                {
                    "type": "session.input_transcript.delta",
                    "event_id": f"u{turn}",
                    "delta": "What time is it?",
                    "start_ms": base,
                    "end_ms": base + 1500,
                }
            )
        ]
        for n in range(30):
            start = base + 2000 + n * DELTA_MS
            frames.append(
                json.dumps(
                    {
                        "type": "session.output_audio.delta",
                        "delta": audio,
                        "start_ms": start,
                        "end_ms": start + DELTA_MS,
                    }
                )
            )
            if n % 3 == 0:
                frames.append(
                    json.dumps(
                        {
                            "type": "session.output_transcript.delta",
                            "event_id": f"w{turn}-{n}",
                            "delta": "word ",
                            "start_ms": start,
                            "end_ms": start + 3 * DELTA_MS,
                        }
                    )
                )
        out.append(frames)
    return out


async def serve(turns: int) -> None:
    from websockets.asyncio.server import ServerConnection
    from websockets.asyncio.server import serve as ws_serve

    frames = script(turns)

    async def handler(ws: ServerConnection) -> None:
        await ws.recv()  # session.start
        await ws.send(json.dumps({"type": "session.started", "event_id": "e1", "session": SESSION}))
        for turn in frames:
            for frame in turn:
                await ws.send(frame)
            await asyncio.sleep(0.05)
        await ws.close()

    async with ws_serve(handler, "127.0.0.1", 0) as server:
        print(next(iter(server.sockets)).getsockname()[1], flush=True)  # the port, for the parent
        await asyncio.Future()


def listen(output: Any, stop: threading.Event) -> None:
    import numpy as np

    buf = np.empty(RATE_HZ // 50, dtype=np.int16)
    while not stop.is_set():
        if output.unheard_samples:
            output.pull_into(buf)
        else:
            time.sleep(0.002)


async def client(url: str) -> dict[str, float]:
    from voxwire.agents import RealtimeAgent
    from voxwire.asyncio.live import LiveSession
    from voxwire.audio import AudioOutput

    output = AudioOutput(RATE_HZ, prebuffer_ms=0)
    stop = threading.Event()
    listener = threading.Thread(target=listen, args=(output, stop), daemon=True)
    listener.start()
    before = resource.getrusage(resource.RUSAGE_SELF)
    events = 0
    async with LiveSession(RealtimeAgent(name="Bench"), url=url, audio_output=output) as session:
        async for _ in session:
            events += 1
    after = resource.getrusage(resource.RUSAGE_SELF)
    stop.set()
    listener.join()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": cpu, "events": events, "heard_ms": session.metrics.audio_heard_ms}


def run_one(pythonpath: str, url: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    done = subprocess.run(
        [sys.executable, __file__, "client", "--url", url],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode")
    srv = sub.add_parser("serve")
    srv.add_argument("--turns", type=int, required=True)
    cli = sub.add_parser("client")
    cli.add_argument("--url", required=True)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--compare", help="another checkout's python/ folder, run alternately")
    args = parser.parse_args()
    if args.mode == "serve":
        asyncio.run(serve(args.turns))
        return
    if args.mode == "client":
        print(json.dumps(asyncio.run(client(args.url))))
        return
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
    sides = {"this": os.path.abspath(here)}
    if args.compare:
        sides["compare"] = os.path.abspath(args.compare)
    frames = sum(len(turn) for turn in script(args.turns))
    cpu: dict[str, list[float]] = {side: [] for side in sides}
    for run in range(args.runs):
        for side, path in sides.items():
            command = [sys.executable, __file__, "serve", "--turns", str(args.turns)]
            server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
            try:
                assert server.stdout is not None
                port = int(server.stdout.readline())
                result = run_one(path, f"ws://127.0.0.1:{port}/v1/live/sessions")
            finally:
                server.terminate()
                server.wait()
            cpu[side].append(result["cpu_s"])
            print(f"run {run + 1} {side}: {result}", file=sys.stderr)
    print(f"{frames} server frames per session ({args.turns} turns)")
    print("| client | CPU s, median (runs) | µs per frame |")
    print("|---|---:|---:|")
    for side, values in cpu.items():
        median = statistics.median(values)
        runs = ", ".join(f"{v:.3f}" for v in values)
        print(f"| {side} ({sides[side]}) | {median:.3f} ({runs}) | {median / frames * 1e6:.1f} |")


if __name__ == "__main__":
    main()
