"""The Twilio bridge under load: CPU per call-minute, and concurrent calls on one core.

    python benches/twilio_bridge.py --calls 10,25,50,100 --seconds 30

Three processes:

* the **local realtime server** (``voxwire serve``: espeak-ng voice, server VAD, audio at real
  time in 100 ms deltas), on the other core;
* the **bridge** (``bridge`` subcommand): :class:`~voxwire.telephony.twilio.PhoneServer` +
  :class:`~voxwire.telephony.twilio.TwilioBridge`, one ``RealtimeSession`` per call, pinned to
  core 0 alone (``os.sched_setaffinity``). Its CPU is ``getrusage`` user + system over the
  measured window;
* **Twilio** (this process, the other core): N calls at real-time pace. Each sends one 20 ms
  ``media`` message every 20 ms (a 6 s cycle: 1.5 s of speech, then silence: the server's VAD
  ends the turn and the agent answers ~2 s), and plays what the bridge sends on a line that
  sends each mark back once its audio has played.

A **late media frame**: a caller frame the bridge read more than 20 ms (one frame) after Twilio
sent it. Each ``media`` carries its send time (``media.timestamp``: ms since the ``t0`` custom
parameter, both on the machine's clock), and the bridge's socket is wrapped to stamp each read.
Per N: bridge CPU s per call-minute, % of the core, frames, % late, lateness p50 / p99, and
the bridge's own event-loop lag (a 5 ms sleep's overshoot, p99): when frames are late while the
bridge's loop is not, the delay was outside the bridge (Twilio's side, the machine).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

TICK_S = 0.02
LATE_MS = 20.0
SCENARIO = {"rules": [], "fallback": "Your order is on its way and arrives tomorrow morning."}
CONFIG = {
    "audio": {
        "input": {
            "turn_detection": {"type": "server_vad", "silence_duration_ms": 400},
        }
    }
}
_TIMESTAMP = re.compile(rb'"timestamp":"(\d+)"')


# --- the bridge process ---------------------------------------------------------------------------


class _Stamped:
    """The bridge's socket, stamping when each caller frame was read."""

    def __init__(self, ws: Any, lateness: list[float]) -> None:
        self.ws = ws
        self.lateness = lateness
        self.t0_ms: float | None = None

    async def recv(self) -> str | bytes:
        message = await self.ws.recv()
        data = message.encode() if isinstance(message, str) else message
        if self.t0_ms is None and b'"t0"' in data:
            self.t0_ms = float(json.loads(data)["start"]["customParameters"]["t0"])
        elif self.t0_ms is not None and (found := _TIMESTAMP.search(data)) is not None:
            self.lateness.append(time.time() * 1000 - self.t0_ms - int(found.group(1)))
        return message

    async def send(self, message: str) -> None:
        await self.ws.send(message)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        await self.ws.close(code, reason)


def bridge_main(args: argparse.Namespace) -> None:
    os.sched_setaffinity(0, {args.core})
    profile = os.environ.get("TWILIO_BRIDGE_PROFILE")  # a path: cProfile the bridge into it
    if profile:
        import cProfile

        cProfile.runctx(
            "asyncio.run(_bridge(args.url, args.input_batch_ms))", globals(), locals(), profile
        )
    else:
        asyncio.run(_bridge(args.url, args.input_batch_ms))


async def _bridge(url: str, input_batch_ms: int) -> None:
    from voxwire.agents import RealtimeAgent
    from voxwire.telephony.twilio import PhoneServer, TwilioBridge

    lateness: list[float] = []
    agent = RealtimeAgent(name="Phone", instructions="phone")
    bridge = TwilioBridge(agent, url=url, config=CONFIG, input_batch_ms=input_batch_ms)
    handle = bridge.handle
    bridge.handle = lambda ws, report=None: handle(_Stamped(ws, lateness), report)  # type: ignore[method-assign]
    lags: list[float] = []

    async def watch_loop() -> None:
        """How late the bridge's own event loop wakes up (5 ms sleeps)."""
        while True:
            before = time.monotonic()
            await asyncio.sleep(0.005)
            lags.append((time.monotonic() - before - 0.005) * 1000)

    async with PhoneServer(bridge) as phone:
        print(phone.port, flush=True)
        watcher = asyncio.create_task(watch_loop())
        loop = asyncio.get_running_loop()
        started = resource.getrusage(resource.RUSAGE_SELF)
        while (line := await loop.run_in_executor(None, sys.stdin.readline)) != "":
            if line.strip() == "begin":
                started, lateness[:], lags[:] = resource.getrusage(resource.RUSAGE_SELF), [], []
            elif line.strip() == "report":
                now = resource.getrusage(resource.RUSAGE_SELF)
                cpu = now.ru_utime - started.ru_utime + now.ru_stime - started.ru_stime
                report = {"cpu_s": cpu, "lateness_ms": lateness, "loop_lag_ms": sorted(lags)}
                print(json.dumps(report), flush=True)
        watcher.cancel()


# --- Twilio's side (this process) -----------------------------------------------------------------


class Caller:
    """One call: a frame every 20 ms, a line that plays what comes back and returns marks."""

    def __init__(self, url: str, speech: list[str], silence: str, index: int) -> None:
        self.url, self.speech, self.silence, self.index = url, speech, silence, index
        self.queued = 0  # samples received
        self.played = 0
        self.marks: deque[tuple[int, str]] = deque()
        self.heard = 0
        self.sent = 0

    async def run(self, t0: float, until: float) -> None:
        from websockets.asyncio.client import connect

        sid = f"MZ{self.index:032d}"
        async with connect(self.url, compression=None) as ws:
            await ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1"}))
            start = {"streamSid": sid, "callSid": f"CA{self.index:032d}", "accountSid": "AC1"}
            start["customParameters"] = {"t0": str(t0 * 1000)}  # type: ignore[assignment]
            await ws.send(json.dumps({"event": "start", "streamSid": sid, "start": start}))
            receiver = asyncio.create_task(self._receive(ws))
            head = f'{{"event":"media","streamSid":"{sid}","media":{{"track":"inbound",'
            tick = 0
            due = time.monotonic() + (self.index % 50) * TICK_S / 50  # spread the calls
            while time.monotonic() < until:
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                cycle = tick % 300  # 6 s
                payload = self.speech[cycle] if cycle < len(self.speech) else self.silence
                stamp = int(time.time() * 1000 - t0 * 1000)
                await ws.send(f'{head}"timestamp":"{stamp}","payload":"{payload}"}}}}')
                self.sent += 1
                for name in self._play():
                    await ws.send(
                        f'{{"event":"mark","streamSid":"{sid}","mark":{{"name":"{name}"}}}}'
                    )
                tick += 1
                due += TICK_S
            await ws.send(json.dumps({"event": "stop", "streamSid": sid, "stop": {}}))
            receiver.cancel()

    def _play(self) -> list[str]:
        self.played = min(self.queued, self.played + 160)
        names = []
        while self.marks and self.marks[0][0] <= self.played:
            names.append(self.marks.popleft()[1])
        return names

    async def _receive(self, ws: Any) -> None:
        async for message in ws:
            if message.startswith('{"event":"media"'):
                payload = message.rsplit('"payload":"', 1)[1].split('"', 1)[0]
                n = len(payload) * 3 // 4 - payload.count("=")
                self.queued += n
                self.heard += n
                continue
            event = json.loads(message)
            if event["event"] == "mark":
                self.marks.append((self.queued, event["mark"]["name"]))
            elif event["event"] == "clear":
                self.queued = self.played
                for _, name in self.marks:
                    await ws.send(json.dumps({"event": "mark", "mark": {"name": name}}))
                self.marks.clear()


def caller_audio() -> tuple[list[str], str]:
    """1.5 s of speech (the server's voice) and 20 ms of silence, as base64 µ-law frames."""
    from voxwire.server.engines.tts import Voice

    voice = Voice.load("espeak")
    try:
        spoken = voice.speak_blocking("Hello, where is my order please?", "echo", 1.0, "audio/pcmu")
    finally:
        voice.close()
    ulaw = spoken.audio[:12_000]
    frames = [base64.b64encode(ulaw[i : i + 160]).decode() for i in range(0, len(ulaw), 160)]
    return frames, base64.b64encode(b"\xff" * 160).decode()


async def measure(
    bridge: subprocess.Popen[str], port: int, calls: int, seconds: float
) -> dict[str, Any]:
    speech, silence = caller_audio()
    url = f"ws://127.0.0.1:{port}/media"
    warmup = 3.0
    t0 = time.time()
    until = time.monotonic() + warmup + seconds
    callers = [Caller(url, speech, silence, i) for i in range(calls)]
    tasks = [asyncio.create_task(c.run(t0, until)) for c in callers]
    await asyncio.sleep(warmup)
    assert bridge.stdin is not None
    assert bridge.stdout is not None
    bridge.stdin.write("begin\n")
    bridge.stdin.flush()
    await asyncio.sleep(seconds)
    bridge.stdin.write("report\n")
    bridge.stdin.flush()
    report = json.loads(await asyncio.to_thread(bridge.stdout.readline))
    await asyncio.gather(*tasks)
    lateness = sorted(report["lateness_ms"])
    late = sum(1 for x in lateness if x > LATE_MS)
    return {
        "calls": calls,
        # per minute of call the bridge actually moved (50 caller frames a second): a starved
        # bridge that read fewer frames is not credited with the minutes it fell behind on
        "cpu_s_per_call_minute": report["cpu_s"] / max(1e-9, len(lateness) / 3000),
        "core_percent": report["cpu_s"] / seconds * 100,
        "frames": len(lateness),
        "late_percent": 100 * late / max(1, len(lateness)),
        "p50_ms": statistics.median(lateness) if lateness else 0.0,
        "p99_ms": lateness[int(len(lateness) * 0.99)] if lateness else 0.0,
        "agent_audio_s": sum(c.heard for c in callers) / 8000 / calls,
        "loop_lag_p99_ms": lags[int(len(lags) * 0.99)] if (lags := report["loop_lag_ms"]) else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command")
    br = sub.add_parser("bridge")
    br.add_argument("--url", required=True)
    br.add_argument("--core", type=int, default=0)
    br.add_argument("--input-batch-ms", type=int, default=20)
    parser.add_argument("--calls", default="10,25,50,100")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--core", type=int, default=0, help="the bridge's core")
    parser.add_argument("--input-batch-ms", type=int, default=20, help="TwilioBridge option")
    args = parser.parse_args()
    if args.command == "bridge":
        bridge_main(args)
        return
    others = sorted(os.sched_getaffinity(0) - {args.core}) or [args.core]
    os.sched_setaffinity(0, set(others))
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "scenario.json"
        scenario.write_text(json.dumps(SCENARIO))
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "voxwire.cli",
                "serve",
                "--port",
                "0",
                "--tts",
                "espeak",
                "--scenario",
                str(scenario),
                "--pace",
                "1",
            ],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert server.stdout is not None
            url = next(w for w in server.stdout.readline().split() if w.startswith("ws://"))
            rows = [run_bridge(url, int(n), args) for n in args.calls.split(",")]
        finally:
            server.terminate()
            server.wait()
    print(f"CPU: {cpu_model()}, load average after: {os.getloadavg()[0]:.1f}")
    print(
        "| calls | bridge CPU s / call-min | % of one core | caller frames | late % | "
        "lateness p50 / p99 ms | bridge loop lag p99 ms | agent audio s / call |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['calls']} | {r['cpu_s_per_call_minute']:.3f} | {r['core_percent']:.0f} | "
            f"{r['frames']} | {r['late_percent']:.2f} | {r['p50_ms']:.1f} / {r['p99_ms']:.1f} | "
            f"{r['loop_lag_p99_ms']:.1f} | "
            f"{r['agent_audio_s']:.1f} |"
        )


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def run_bridge(url: str, calls: int, args: argparse.Namespace) -> dict[str, Any]:
    bridge = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "bridge",
            "--url",
            url,
            "--core",
            str(args.core),
            "--input-batch-ms",
            str(args.input_batch_ms),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert bridge.stdout is not None
        port = int(bridge.stdout.readline())
        return asyncio.run(measure(bridge, port, calls, args.seconds))
    finally:
        assert bridge.stdin is not None
        bridge.stdin.close()  # the bridge ends (and writes its profile, if asked)
        try:
            bridge.wait(30)
        except subprocess.TimeoutExpired:
            bridge.terminate()
            bridge.wait()


if __name__ == "__main__":
    main()
