"""The session holds its conversation's lease: a second session on the same conversation —
new or resumed, in this process or another — is refused while the first lives, and takes it
once the first closed. Against the local server on loopback, on SQLite and PostgreSQL.

Needs the session to take the lease (voxwire.asyncio.persistence.recording:
``Persistence.take``)."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import pytest

from tests.asyncio.agent_helpers import ask
from tests.asyncio.helpers import MANUAL, run, serving
from tests.store.conftest import Backend, spawn
from tests.store.session_child import SCENARIO, agents
from voxwire.asyncio import RealtimeSession
from voxwire.exceptions import ConversationHeld


def test_a_held_conversation_cannot_be_taken_by_a_second_session(
    backend: Backend, tmp_path: Path
) -> None:
    async def body() -> None:
        store = await backend.open()
        agent = agents(tmp_path, gate=False)
        async with serving(scenario=SCENARIO) as server:
            first = RealtimeSession(
                agent, url=server.url(), config=MANUAL, store=store, conversation_id="call-7"
            )
            async with first:
                await ask(first, "what is the weather")
                second = RealtimeSession.resume(
                    store, "call-7", agent=agent, url=server.url(), config=MANUAL
                )
                with pytest.raises(ConversationHeld) as caught:
                    await second.connect()
                assert "conversation 'call-7' is held by" in str(caught.value)
            held = [item.id for item in first.snapshot().items]
            # Nothing of the refused session interleaved; closed, the lease is given back, and
            # a resume takes the conversation at once.
            assert [item.id for item in (await store.load("call-7")).items] == held
            third = RealtimeSession.resume(
                store, "call-7", agent=agent, url=server.url(), config=MANUAL
            )
            async with third:
                await ask(third, "and tomorrow")
            assert (await store.info("call-7")).item_count > len(held)
        await store.close()

    run(body())


def test_a_killed_sessions_conversation_resumes_at_once_on_its_machine(
    backend: Backend, tmp_path: Path
) -> None:
    """README: "process dies → resume in any process". A session process holding its
    conversation with a 30 s lease is SIGKILLed; a resume in this process connects at once (the
    dead holder is on this machine), without waiting for the lease to expire."""

    async def body() -> None:
        store = await backend.open()
        async with serving(scenario=SCENARIO) as server:
            child = spawn(
                "tests.store.session_child",
                *backend.argv(),
                server.url(),
                "call-9",
                "response",
                str(tmp_path),
                "30",
            )
            try:
                assert child.stdout is not None
                while (got := await asyncio.to_thread(child.stdout.readline)) != "turn done\n":
                    assert got, child.stderr.read() if child.stderr else ""
                with pytest.raises(ConversationHeld, match=f"process {child.pid} on host"):
                    await store.acquire("call-9")
            finally:
                child.send_signal(signal.SIGKILL)
                await asyncio.to_thread(child.wait)
            killed = time.monotonic()
            stored = len((await store.load("call-9")).items)  # what the killed child wrote
            resumed = RealtimeSession.resume(
                store, "call-9", agent=agents(tmp_path, gate=False), url=server.url(), config=MANUAL
            )
            async with resumed:
                took_s = time.monotonic() - killed
                await ask(resumed, "and tomorrow")
            assert (await store.info("call-9")).item_count == stored + 2  # its turn is stored
        await store.close()
        print(f"resumed {took_s:.2f} s after the kill (lease ttl 30 s)")

    run(body())
