"""A SIP call outlives its sideband (docs/telephony.md, "Failover between workers"): when the
application's websocket on a call goes away, the call and its session go on — the caller keeps
talking into it, the agent's answers keep reaching the phone — and a new websocket attached by
the same ``call_id`` joins that same session: its own ``session.created``, the events from then
on, the conversation as it stands. A session resumed on such a call replays nothing (the
call's session holds the conversation); resumed onto another call, it is replayed there."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from tests.server.test_sip_trunk import ringing
from voxwire.asyncio import RealtimeSession
from voxwire.protocol import Item
from voxwire.server.connection import RealtimeConnection
from voxwire.store import SQLiteStore
from voxwire.telephony.sip import SipCalls


async def _next(ws: ClientConnection, kind: str) -> dict[str, Any]:
    async with asyncio.timeout(10):
        while True:
            event = json.loads(await ws.recv())
            if event["type"] == kind:
                return dict(event)


def _answers(connection: RealtimeConnection) -> list[Item]:
    items = connection.session.conversation.items()
    return [i for i in items if getattr(i, "role", None) == "assistant"]


def test_a_new_sideband_joins_the_session_the_old_one_left() -> None:
    async def body() -> None:
        async with ringing() as (trunk, phone, server):
            async with SipCalls(base_url=trunk.api_base_url) as calls:
                await calls.accept(phone.call_id, config={"instructions": "Be brief."})
            url = f"{server.base_url}/realtime?call_id={phone.call_id}"
            async with connect(url) as first:
                created = await _next(first, "session.created")
                item = {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "hello"}],
                }
                await first.send(json.dumps({"type": "conversation.item.create", "item": item}))
                added = await _next(first, "conversation.item.added")
            # No sideband: the call goes on, and so does its session.
            assert phone.state == "accepted"
            assert phone.line.connection is not None
            connection = phone.line.connection
            await connection.feed(json.dumps({"type": "response.create"}))
            async with asyncio.timeout(10):
                while len(_answers(connection)) < 1:  # noqa: ASYNC110 - the server's state
                    await asyncio.sleep(0.01)
            async with connect(url) as second:
                again = await _next(second, "session.created")
                assert again["session"]["id"] == created["session"]["id"]
                assert again["session"]["instructions"] == "Be brief."
                await second.send(json.dumps({"type": "response.create"}))
                done = await _next(second, "response.done")
            ids = [i.id for i in phone.line.connection.session.conversation.items()]
            assert ids[0] == added["item"]["id"]  # the first sideband's item is still there
            # Two responses: the one made with no sideband, the second sideband's.
            answers = _answers(connection)
            assert len(answers) == 2
            assert answers[-1].id == done["response"]["output"][0]["id"]
            assert phone.call.attached == 2

    asyncio.run(body())


def test_a_session_resumed_on_a_call_replays_nothing(tmp_path: Path) -> None:
    async def body() -> None:
        async with ringing() as (trunk, phone, server):
            async with SipCalls(base_url=trunk.api_base_url) as calls:
                await calls.accept(phone.call_id, config={"instructions": "Be brief."})
            store = await SQLiteStore.open(tmp_path / "calls.db")
            url = f"{server.base_url}/realtime"
            async with RealtimeSession(
                url=url, call_id=phone.call_id, store=store, conversation_id=phone.call_id
            ) as session:
                await session.send_message("hello")
                async for event in session:
                    if event.type == "response_done":
                        break
            assert phone.line.connection is not None
            before = [i.id for i in phone.line.connection.session.conversation.items()]
            assert len(before) == 2
            resumed = RealtimeSession.resume(store, phone.call_id, url=url, call_id=phone.call_id)
            errors: list[object] = []
            async with resumed:
                await resumed.send_message("again")
                async for event in resumed:
                    if event.type == "error":
                        errors.append(event)
                    if event.type == "response_done":
                        break
            after = [i.id for i in phone.line.connection.session.conversation.items()]
            assert after[:2] == before  # nothing created twice
            assert len(after) == 4
            assert errors == []
            stored = [i.id for i in (await store.load(phone.call_id)).items]
            assert stored == after
            # The same conversation resumed onto another call is replayed there.
            other = await trunk.call()
            async with SipCalls(base_url=trunk.api_base_url) as calls:
                await calls.accept(other.call_id, config={"instructions": "Be brief."})
            onto = RealtimeSession.resume(store, phone.call_id, url=url, call_id=other.call_id)
            async with onto:
                pass
            assert other.line.connection is not None
            replayed = other.line.connection.session.conversation.items()
            assert [i.id for i in replayed] == stored
            await store.close()

    asyncio.run(body())
