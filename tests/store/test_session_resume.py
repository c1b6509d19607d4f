"""A session process killed with SIGKILL — mid-response, mid-tool-call (its output computed and
stored, not yet confirmed by the server), while a call waits for approval — and the
conversation resumed in this process from the store it wrote, on SQLite and on PostgreSQL,
against the local server on loopback: the history is intact, the tool ran once, its output is
in the new server's conversation once, approvals come back pending, and every client event of
the resumed session validates against the official types with no error from the server."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.asyncio.agent_helpers import settle
from tests.asyncio.helpers import MANUAL, SLOW, run, serving, until
from tests.children import child_env
from tests.protocol.test_conformance import assert_official
from tests.store.conftest import Backend
from tests.store.session_child import SCENARIO, agents
from voxwire.asyncio import RealtimeSession, SessionEvent
from voxwire.asyncio.connection.transport import ConnectRequest, Transport, connect_websocket
from voxwire.asyncio.events import ErrorEvent, ToolApprovalRequestedEvent, ToolStartEvent
from voxwire.asyncio.persistence.resumption import items_to_replay
from voxwire.exceptions import ConversationHeld
from voxwire.server import Delay, RealtimeServer
from voxwire.store import ConversationStore, SessionSnapshot

ROOT = Path(__file__).resolve().parents[2]


class RecordingConnector:
    """Opens websockets like the default connector and keeps every frame sent."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def __call__(self, request: ConnectRequest) -> Transport:
        return _Recording(await connect_websocket(request), self.sent)


class _Recording:
    def __init__(self, inner: Transport, sent: list[str]) -> None:
        self._inner = inner
        self._sent = sent

    async def send(self, frame: str) -> None:
        self._sent.append(frame)
        await self._inner.send(frame)

    async def recv(self) -> str | bytes:
        return await self._inner.recv()

    async def close(self) -> None:
        await self._inner.close()


Killer = Callable[[RealtimeServer, ConversationStore], Awaitable[None]]


async def crash(
    backend: Backend, server: RealtimeServer, workdir: Path, mode: str, before_kill: Killer
) -> SessionSnapshot:
    """Run the child session in ``mode``, SIGKILL it once ``before_kill`` returns; what the
    store holds then."""
    env = child_env()
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.store.session_child",
        *backend.argv(),
        server.url(),
        "call-1",
        mode,
        str(workdir),
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    store = await backend.open()
    try:
        await line(child, "turn done")
        await before_kill(server, store)
        child.kill()
        assert await child.wait() == -9
        await expired(store, "call-1")
        return await store.load("call-1")
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
        await store.close()


async def expired(store: ConversationStore, conversation_id: str) -> None:
    """Wait until the killed session's lease ran out (refused until then)."""
    for _ in range(200):
        try:
            await store.release(await store.acquire(conversation_id))
            return
        except ConversationHeld:
            await asyncio.sleep(0.05)
    raise AssertionError("the killed session's lease never expired")


async def line(child: asyncio.subprocess.Process, expected: str) -> None:
    assert child.stdout is not None
    while True:
        got = (await asyncio.wait_for(child.stdout.readline(), 20)).decode()
        if not got:
            assert child.stderr is not None
            raise AssertionError(f"the child ended: {(await child.stderr.read()).decode()}")
        if got.strip() == expected:
            return


async def stored(store: ConversationStore, what: Callable[[SessionSnapshot], bool]) -> None:
    for _ in range(2000):
        if what(await store.load("call-1")):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the store never held what the test waits for")


Drive = Callable[[RealtimeSession], Awaitable[list[SessionEvent]]]


async def resumed(
    backend: Backend, server: RealtimeServer, workdir: Path, drive: Drive
) -> tuple[list[SessionEvent], SessionSnapshot, list[str], list[Any]]:
    """Resume call-1 from the store in this process and ``drive`` it: its events, the store
    afterwards, the client frames sent, and the new server's conversation (which the session's
    history matches)."""
    store = await backend.open()
    connector = RecordingConnector()
    try:
        session = RealtimeSession.resume(
            store,
            "call-1",
            agent=agents(workdir, gate=False),
            url=server.url(),
            config=MANUAL,
            connector=connector,
        )
        async with session:
            events = await drive(session)
            history = [item.item_id for item in session.history]
            conversation = server.connections[-1].session.conversation.items()
        after = await store.load("call-1")
    finally:
        await store.close()
    assert [item.id for item in conversation] == history
    return events, after, connector.sent, conversation


async def next_turn(session: RealtimeSession) -> list[SessionEvent]:
    await session.send_message("hello again")
    return await settle(session)


def check_replay(before: SessionSnapshot, sent: list[str], conversation: list[Any]) -> None:
    """The new server holds the replayable items first, in order, with their ids; every frame
    sent validates against the official types."""
    items, _ = items_to_replay(before)
    assert [item.id for item in conversation[: len(items)]] == [item.id for item in items]
    assert len(sent) > len(items)
    for frame in sent:
        assert_official(frame)


def test_killed_mid_response(backend: Backend, tmp_path: Path) -> None:
    async def kill_when_speaking(server: RealtimeServer, store: ConversationStore) -> None:
        await stored(store, lambda s: len(s.items) == 4)  # the story's item is in progress

    async def body() -> None:
        async with serving(scenario=SCENARIO, pacing=SLOW) as server:
            before = await crash(backend, server, tmp_path, "response", kill_when_speaking)
            story = before.items[-1]
            assert story.wire["status"] == "in_progress"
            events, after, sent, conversation = await resumed(backend, server, tmp_path, next_turn)
        assert not [e for e in events if isinstance(e, ErrorEvent)]
        check_replay(before, sent, conversation)
        # hello, its answer and the story's question are back; the unfinished story is not
        # replayed (a client cannot send back what was never said) but stays in the store.
        assert [i.id for i in conversation[:3]] == [i.id for i in before.items[:3]]
        assert story.id not in [i.id for i in conversation]
        # The store goes on: the new turn (question and answer) follows the last replayed item,
        # the unfinished story stays last, not replayed.
        assert [i.id for i in after.items] == [
            *(i.id for i in conversation),
            story.id,
        ]
        assert after.items[1].transcripts == before.items[1].transcripts
        assert after.items[4].transcripts == {0: "You said: hello again"}

    run(body(), timeout_s=60)


def outputs_of(items: Any, call_id: str) -> list[Any]:
    return [
        i
        for i in items
        if getattr(i, "type", None) == "function_call_output" and (i.call_id == call_id)
    ]


def test_killed_after_the_tool_ran_before_the_server_confirmed_its_output(
    backend: Backend, tmp_path: Path
) -> None:
    async def kill_with_output_stored(server: RealtimeServer, store: ConversationStore) -> None:
        # The tool runs and waits for the gate: hold the server's confirmations from now on,
        # let the tool answer, and kill once its output is stored (sent, not confirmed).
        await stored(store, lambda s: (tmp_path / "ran").exists())
        # (4 s: the server's close waits for a held event; the kill comes long before.)
        await server.connections[-1].inject(
            Delay(ms=4_000, of_type="conversation.item.added", count=1)
        )
        (tmp_path / "gate").touch()
        await stored(store, lambda s: bool(s.outputs))

    async def follow_up(session: RealtimeSession) -> list[SessionEvent]:
        return await settle(session, timeout_s=20)

    async def body() -> None:
        async with serving(scenario=SCENARIO) as server:
            before = await crash(backend, server, tmp_path, "tool", kill_with_output_stored)
            (call_id,) = before.outputs
            assert before.outputs[call_id] == '{"temperature":21}'
            events, after, sent, conversation = await resumed(backend, server, tmp_path, follow_up)
        assert not [e for e in events if isinstance(e, ErrorEvent | ToolStartEvent)]
        check_replay(before, sent, conversation)
        assert (tmp_path / "ran").read_text() == "get_weather Paris\n"  # ran once, there
        (output,) = outputs_of(conversation, call_id)  # delivered once, here
        assert output.output == '{"temperature":21}'
        assert conversation[-1].content[0].text == "It is 21 degrees in Paris."
        assert after.outputs == {}
        assert len(outputs_of(after.items, call_id)) == 1
        assert [i.id for i in after.items] == [i.id for i in conversation]

    run(body(), timeout_s=60)


def test_killed_while_a_call_waits_for_approval(backend: Backend, tmp_path: Path) -> None:
    async def kill_when_pending(server: RealtimeServer, store: ConversationStore) -> None:
        await stored(store, lambda s: bool(s.approvals))

    async def approve(session: RealtimeSession) -> list[SessionEvent]:
        events = await until(session, lambda e: isinstance(e, ToolApprovalRequestedEvent))
        assert session.pending_tool_approvals == (events[-1].call_id,)  # type: ignore[union-attr]
        session.approve_tool_call(events[-1].call_id)  # type: ignore[union-attr]
        return events + await settle(session, timeout_s=20)

    async def body() -> None:
        async with serving(scenario=SCENARIO) as server:
            before = await crash(backend, server, tmp_path, "approval", kill_when_pending)
            (call_id,) = before.approvals
            assert before.approvals[call_id]["name"] == "book"
            assert not (tmp_path / "ran").exists()
            events, after, sent, conversation = await resumed(backend, server, tmp_path, approve)
        assert not [e for e in events if isinstance(e, ErrorEvent)]
        (request,) = [e for e in events if isinstance(e, ToolApprovalRequestedEvent)]
        assert request.call_id == call_id
        check_replay(before, sent, conversation)
        assert (tmp_path / "ran").read_text() == "book Rome\n"
        assert len(outputs_of(conversation, call_id)) == 1
        assert conversation[-1].content[0].text == "Done: trip to Rome."
        assert (after.approvals, after.outputs) == ({}, {})

    run(body(), timeout_s=60)
