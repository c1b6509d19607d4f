"""One scripted SIP call through two worker processes, the owner SIGKILLed mid-call: what the
failover test asserts and what ``benches/sip_failover.py`` measures.

The carrier is the local server's SIP trunk; the workers (``tests/telephony/failover_worker.py``)
share a throwaway PostgreSQL schema. The call: the caller speaks; the agent calls its tool
``lookup`` (two seconds of work), then answers at length. ``mode``: ``"tool"`` kills the owner
while its tool runs, ``"answer"`` at the first words of the answer after the tool; ``"drain"``
sends it SIGTERM there instead (it hands its calls over and exits); ``"event"`` kills it right
after its session's ``kill_after``-th event (deltas not counted): the fuzz of the kill point.
"""

from __future__ import annotations

import asyncio
import itertools
import signal
import socket
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tests.children import ROOT, child_env
from tests.telephony.conftest import SECRET, caller_speech
from voxwire.server import RealtimeServer, Scenario
from voxwire.server.connection import RealtimeConnection
from voxwire.server.phone import PHONE_RATE_HZ, Caller, Pause, PhoneLine
from voxwire.server.responses import Pacing
from voxwire.server.sip import PhoneCall, SipTrunk
from voxwire.store.postgres import PostgresStore
from voxwire.telephony.calls_table import CallsTable
from voxwire.telephony.sip import SipCalls

Mode = Literal["tool", "answer", "drain", "event"]
ANSWER = "I have looked at your account, and here is what I found for you today. " * 2
SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"call": {"name": "lookup", "arguments": {"account": "1234"}}},
            {"after_tool": "lookup", "say": ANSWER},
        ],
        "fallback": None,
    }
)
REAL_TIME = Pacing(audio_pace=1.0, text_tokens_per_s=50, audio_chunk_ms=100)
TIMEOUT_S = 30.0
QUIET_S = 1.5  # no agent audio for this long after the answer: the answer is over


@dataclass
class Outcome:
    """What one failover run left: for the assertions and the figures."""

    tool_runs: list[str]  # the lines of WORKDIR/ran: one per run of the tool
    took_over_s: float  # from the kill to the other worker's "took over"
    gap_s: float  # the caller's side: the longest stretch with no agent audio where some was due
    heard_after_s: float  # agent audio the phone got after the kill, in seconds
    stored_ids: list[str]  # the conversation's item ids in the store, in order
    server_ids: list[str]  # the call's server session's item ids, in order


class Worker:
    """A worker process and its stdout lines."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def wait_for(self, prefix: str, timeout_s: float = TIMEOUT_S) -> str:
        """The next stdout line starting with ``prefix`` (other lines skipped)."""
        assert self.process.stdout is not None
        async with asyncio.timeout(timeout_s):
            while True:
                line = (await self.process.stdout.readline()).decode()
                if not line:
                    raise RuntimeError(f"the worker ended before printing {prefix!r}")
                if line.startswith(prefix):
                    return line.strip()

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
        await self.process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _spawn(args: list[str], log: Path) -> Worker:
    """A worker; its stderr (logs, tracebacks) in ``log``."""
    with log.open("ab") as errors:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.telephony.failover_worker",
            *args,
            cwd=ROOT,
            env=child_env(),
            stdout=asyncio.subprocess.PIPE,
            stderr=errors,
        )
    return Worker(process)


def caller_gap(line: PhoneLine, killed_at: float) -> tuple[float, float]:
    """(the longest silence of the agent at the phone from the kill until the answer's end —
    the kill to the first part of audio after it, or between two parts; the answer streams in
    real time, 100 ms a part —, the seconds of agent audio heard after the kill)."""
    parts = [(at, n) for at, n in line.heard_at if at >= killed_at]
    if not parts:
        return float("inf"), 0.0
    arrivals = [killed_at] + [at for at, _ in parts]
    gap = max(later - earlier for earlier, later in itertools.pairwise(arrivals))
    return gap, sum(n for _, n in parts) / PHONE_RATE_HZ


async def _answer_over(line: PhoneLine, killed_at: float) -> None:
    """Wait until agent audio came after the kill and then stopped for ``QUIET_S``."""
    async with asyncio.timeout(TIMEOUT_S):
        while True:
            await asyncio.sleep(0.1)
            after = [at for at, _ in line.heard_at if at >= killed_at]
            if after and time.monotonic() - after[-1] > QUIET_S:
                return


async def run_failover(
    conninfo: str, workdir: Path, mode: Mode, ttl_s: float = 2.0, kill_after: int = 0
) -> Outcome:
    """One call, its owner killed (module docstring); everything it started is stopped."""
    schema = f"f_{uuid.uuid4().hex[:12]}"
    async with RealtimeServer(scenario=SCENARIO, pacing=REAL_TIME, transcriber=None) as server:
        api_port = _free_port()
        api_base = f"http://127.0.0.1:{api_port}/v1"
        args = [conninfo, schema, server.base_url + "/realtime", api_base, str(workdir)]
        args += [SECRET, str(ttl_s)]
        owner = await _spawn(args, workdir / "owner.log")
        other = await _spawn(args, workdir / "other.log")
        try:
            port = (await owner.wait_for("listening")).split()[1]
            await other.wait_for("listening")
            webhook = f"http://127.0.0.1:{port}/webhook"
            async with SipTrunk(server, webhook_url=webhook, secret=SECRET, port=api_port) as trunk:
                failed_over = await _fail_over(trunk, owner, other, mode, kill_after)
                return await _outcome(trunk, failed_over, conninfo, schema, workdir)
        finally:
            await owner.stop()
            await other.stop()


async def _fail_over(
    trunk: SipTrunk, owner: Worker, other: Worker, mode: Mode, kill_after: int
) -> tuple[PhoneCall, float, float, float]:
    """The call, its owner killed where ``mode`` says, the other worker's takeover, the answer
    over: (the call, the takeover's time, the caller's gap, the audio heard after the kill)."""
    # The line carries silence after the question, as a phone does, until the hang-up.
    phone = await trunk.call(Caller((caller_speech(), Pause(60_000)), pace=1.0))
    trigger = {"tool": "tool running", "event": f"event {kill_after} "}.get(mode, "answer started")
    await owner.wait_for(trigger)
    owner.process.send_signal(signal.SIGTERM if mode == "drain" else signal.SIGKILL)
    killed_at = time.monotonic()
    if mode == "drain":
        await owner.wait_for("drained")
    await owner.process.wait()
    await other.wait_for("took over")
    took_over_s = time.monotonic() - killed_at
    if mode == "event":  # the kill may come after the answer: no audio is due then
        assert phone.line.connection is not None
        await _answered(phone.line.connection)
        return phone, took_over_s, 0.0, 0.0
    await _answer_over(phone.line, killed_at)
    return phone, took_over_s, *caller_gap(phone.line, killed_at)


async def _answered(connection: RealtimeConnection) -> None:
    """Wait until the call's session holds the answer after the tool's output, complete."""
    async with asyncio.timeout(TIMEOUT_S):
        while True:
            await asyncio.sleep(0.1)
            items = connection.session.conversation.items()
            kinds = [(i.type, getattr(i, "status", None)) for i in items]
            if not any(kind == "function_call_output" for kind, _ in kinds):
                continue
            start = next(n for n, k in enumerate(kinds) if k[0] == "function_call_output")
            if ("message", "completed") in kinds[start:] and not connection.responses.responding:
                return


async def _outcome(
    trunk: SipTrunk,
    failed_over: tuple[PhoneCall, float, float, float],
    conninfo: str,
    schema: str,
    workdir: Path,
) -> Outcome:
    """Hang up; the checks' material: the tool's runs, the store against the call."""
    phone, took_over_s, gap_s, heard_s = failed_over
    async with SipCalls(base_url=trunk.api_base_url) as calls:
        await calls.hangup(phone.call_id)
    table = await CallsTable.open(conninfo, schema=schema)
    try:
        async with asyncio.timeout(TIMEOUT_S):
            while phone.call_id in await table.active():  # noqa: ASYNC110 - another process
                await asyncio.sleep(0.1)
    finally:
        await table.close()
    store = await PostgresStore.open(conninfo, schema=schema)
    try:
        snapshot = await store.load(phone.call_id)
    finally:
        await store.close()
    assert phone.line.connection is not None
    server_items = phone.line.connection.session.conversation.items()
    return Outcome(
        tool_runs=(workdir / "ran").read_text().splitlines(),
        took_over_s=took_over_s,
        gap_s=gap_s,
        heard_after_s=heard_s,
        stored_ids=[item.id for item in snapshot.items],
        server_ids=[item.id for item in server_items if item.id is not None],
    )
