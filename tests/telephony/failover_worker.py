"""A SIP worker process for the failover tests (``python -m tests.telephony.failover_worker``):
a :class:`~voxwire.telephony.sip_worker.SipWorker` on the test's PostgreSQL schema, its webhook
served by uvicorn on loopback. The test kills it with SIGKILL at a point it announces on stdout.

Arguments: CONNINFO SCHEMA REALTIME_URL API_BASE_URL WORKDIR SECRET LEASE_TTL_S.

Prints ``listening PORT`` once its webhook serves; ``tool running CALL_ID`` when its tool
starts (the tool appends ``lookup PID CALL_ID`` to WORKDIR/ran, then takes a while);
``answer started CALL_ID`` at the first transcript delta of an answer after a tool;
``took over CALL_ID`` when it took a call over; ``event N TYPE`` after each session event but
deltas. SIGTERM: it drains (hands its calls over),
prints ``drained`` and exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import uvicorn

from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import SessionEvent
from voxwire.store.postgres import PostgresStore
from voxwire.telephony.calls_table import CallsTable
from voxwire.telephony.sip import SipCalls
from voxwire.telephony.sip_worker import SipWorker

TOOL_S = 2.0  # how long the tool works: the test kills the worker meanwhile


def agent(workdir: Path) -> RealtimeAgent:
    @function_tool
    async def lookup(account: str) -> dict[str, Any]:
        """The balance of an account."""
        with (workdir / "ran").open("a") as ran:
            ran.write(f"lookup {os.getpid()} {account}\n")
        print(f"tool running {account}", flush=True)
        await asyncio.sleep(TOOL_S)
        return {"balance": 42}

    return RealtimeAgent(name="bank", instructions="Answer the bank's phone.", tools=[lookup])


def watch(call_id: str, event: SessionEvent) -> None:
    logging.getLogger("worker").info("%s %s", call_id, event.type)
    if not event.type.endswith("_delta"):
        _events.append(event.type)
        print(f"event {len(_events)} {event.type}", flush=True)
    if event.type == "assistant_transcript_delta" and not _answering.get(call_id):
        _answering[call_id] = True
        print(f"answer started {call_id}", flush=True)


_answering: dict[str, bool] = {}
_events: list[str] = []  # the session events so far (deltas not counted), of every call


async def main(argv: list[str]) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    conninfo, schema, url, api_base, workdir, secret, ttl = argv
    store = await PostgresStore.open(conninfo, schema=schema)
    table = await CallsTable.open(conninfo, schema=schema)
    calls = SipCalls(base_url=api_base)
    worker = SipWorker(
        agent(Path(workdir)),
        store=store,
        calls_table=table,
        calls=calls,
        secret=secret,
        url=url,
        lease_ttl_s=float(ttl),
        scan_every_s=0.2,
        on_event=watch,
    )
    config = uvicorn.Config(worker, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn has no event to wait on
        await asyncio.sleep(0.01)
    print(f"listening {server.servers[0].sockets[0].getsockname()[1]}", flush=True)
    scanning = asyncio.create_task(worker.run())
    draining: list[asyncio.Task[None]] = []
    asyncio.get_running_loop().add_signal_handler(
        signal.SIGTERM, lambda: draining.append(asyncio.create_task(drain_and_exit(worker, server)))
    )
    taken = 0
    while not serving.done():
        await asyncio.sleep(0.05)
        for call_id in worker.taken_over[taken:]:
            print(f"took over {call_id}", flush=True)
        taken = len(worker.taken_over)
    scanning.cancel()


async def drain_and_exit(worker: SipWorker, server: uvicorn.Server) -> None:
    """SIGTERM: hand the calls over, then stop serving."""
    await worker.drain()
    print("drained", flush=True)
    server.should_exit = True


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
