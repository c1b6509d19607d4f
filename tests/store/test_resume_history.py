"""A restoration is linear in the conversation's length: resuming a stored conversation gives one
``history_updated`` for the whole replay (not one per acknowledged item, each a copy of the
whole history), and the history it carries is the conversation, in order."""

from __future__ import annotations

from tests.asyncio.helpers import MANUAL, run, serving
from tests.store.conftest import Backend
from tests.store.frames import assistant, user
from voxwire.asyncio import HistoryMessage, HistoryUpdatedEvent, RealtimeSession
from voxwire.store import PutItem, StoredItem

ITEMS = 120


def stored_conversation() -> list[StoredItem]:
    items = []
    for n in range(ITEMS):
        wire = user(f"u{n}", f"question {n}") if n % 2 == 0 else assistant(f"a{n}", f"answer {n}")
        items.append(StoredItem(id=wire["id"], position=n, wire=wire))
    return items


def test_resume_gives_one_history_update_for_the_whole_replay(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        try:
            await store.create("long")
            await store.apply("long", [PutItem(item=item) for item in stored_conversation()])
            async with serving() as server:
                session = RealtimeSession.resume(
                    store, "long", url=server.url(), config=MANUAL, max_queued_events=4096
                )
                await session.connect()
                await session.close()
                events = [event async for event in session]
        finally:
            await store.close()
        updates = [e for e in events if isinstance(e, HistoryUpdatedEvent)]
        assert len(updates) == 1
        history = updates[0].history
        assert [item.item_id for item in history] == [i.id for i in stored_conversation()]
        assert all(isinstance(item, HistoryMessage) for item in history)
        added = [e for e in events if e.type == "history_added"]
        assert len(added) == ITEMS  # each replayed item is still announced once

    run(body())
