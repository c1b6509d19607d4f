"""A session process killed after a local MCP tool answered (its output stored, the server's
confirmation held back), then resumed here from the SQLite store: the output is delivered and
the MCP tool does not run again."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.agents.mcp_child import SCENARIO, door_agent
from tests.asyncio.agent_helpers import last_assistant_text, settle
from tests.asyncio.helpers import MANUAL, run, serving
from tests.children import ROOT, child_env
from tests.store.test_session_resume import expired
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import ToolStartEvent
from voxwire.server import Delay, RealtimeServer
from voxwire.store import ConversationStore, SQLiteStore


async def until_stored(store: ConversationStore, condition: object) -> None:
    for _ in range(2000):
        snapshot = await store.load("call-1")
        if callable(condition) and condition(snapshot):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the store never held what the test waits for")


async def until_file(path: Path) -> None:
    for _ in range(2000):
        if path.exists():  # noqa: ASYNC240 - another process makes it
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


def test_a_resumed_session_does_not_run_a_completed_mcp_call_again(tmp_path: Path) -> None:
    database = str(tmp_path / "store.db")

    async def crash(server: RealtimeServer) -> None:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.agents.mcp_child",
            database,
            server.url(),
            str(tmp_path),
            cwd=ROOT,
            env=child_env(),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        store = await SQLiteStore.open(database)
        try:
            await until_file(tmp_path / "runs")  # the MCP tool runs, waiting for the gate
            # Hold the server's confirmation of the output item from now on: the output is
            # stored and sent, not confirmed, when the process dies (4 s: the kill comes long
            # before).
            await server.connections[-1].inject(
                Delay(ms=4_000, of_type="conversation.item.added", count=1)
            )
            (tmp_path / "gate").touch()
            await until_stored(store, lambda s: bool(s.outputs))
            child.kill()
            assert await child.wait() == -9
            await expired(store, "call-1")
        finally:
            if child.returncode is None:
                child.kill()
                await child.wait()
            await store.close()

    async def body() -> None:
        async with serving(scenario=SCENARIO) as server:
            await crash(server)
            store = await SQLiteStore.open(database)
            before = await store.load("call-1")
            assert list(before.outputs.values()) == ["opened"]
            session = RealtimeSession.resume(
                store, "call-1", agent=door_agent(tmp_path), url=server.url(), config=MANUAL
            )
            try:
                async with session:
                    events = await settle(session, timeout_s=20)
                    assert last_assistant_text(session) == "Tool said: opened"
                    assert not [e for e in events if isinstance(e, ToolStartEvent)]
            finally:
                await store.close()
        assert (tmp_path / "runs").read_text() == "gated\n"  # ran once, in the killed process

    run(body(), timeout_s=90)
