"""The session with a store, in one process, against the local server on loopback: what is
written and when, ``snapshot()`` without a store and resuming from its JSON, handoffs recorded
and restored, a failing store reported while the session goes on, and misuse said at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.asyncio.agent_helpers import ask, of_type
from tests.asyncio.helpers import MANUAL, assert_only_current_task, run, serving
from tests.store.conftest import Backend
from tests.store.session_child import SCENARIO, agents
from voxwire.agents import RealtimeAgent
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import ErrorEvent
from voxwire.exceptions import ConfigurationError, ConversationExists, InvalidState
from voxwire.server import Scenario
from voxwire.store import SessionSnapshot, SQLiteStore


def test_the_store_holds_the_conversation_as_the_session_does(
    backend: Backend, tmp_path: Path
) -> None:
    async def body() -> None:
        store = await backend.open()
        async with (
            serving(scenario=SCENARIO) as server,
            RealtimeSession(
                agents(tmp_path, gate=False), url=server.url(), config=MANUAL, store=store
            ) as session,
        ):
            await ask(session, "what is the weather")
            snapshot = session.snapshot()
            history = [item.item_id for item in session.history]
        stored = await store.load(snapshot.conversation_id)
        await store.close()
        assert session.conversation_id == snapshot.conversation_id
        assert [i.id for i in stored.items] == [i.id for i in snapshot.items] == history
        assert [i.type for i in stored.items] == [
            "message",
            "function_call",
            "function_call_output",
            "message",
        ]
        assert [i.origin for i in stored.items] == ["caller", "model", "sdk", "model"]
        assert stored.items[-1].transcripts == {0: "It is 21 degrees in Paris."}
        assert (stored.agent, stored.outputs, stored.approvals) == ("concierge", {}, {})
        assert stored.usage.responses == 2
        assert stored.usage == snapshot.usage
        assert_only_current_task()

    run(body())


def test_a_snapshot_without_a_store_resumes_from_its_json(tmp_path: Path) -> None:
    async def body() -> None:
        agent = agents(tmp_path, gate=False)
        async with serving(scenario=SCENARIO) as server:
            session = RealtimeSession(agent, url=server.url(), config=MANUAL)
            with pytest.raises(InvalidState, match="before connect"):
                session.snapshot()
            async with session:
                await ask(session, "hello there")
            text = session.snapshot().to_json()  # still readable after close
            resumed = RealtimeSession.resume(text, agent=agent, url=server.url(), config=MANUAL)
            async with resumed:
                assert [i.item_id for i in resumed.history] == [
                    i.id for i in SessionSnapshot.from_json(text).items
                ]
                events = await ask(resumed, "and again")
                assert not of_type(events, ErrorEvent)
                snapshot = resumed.snapshot()
        assert snapshot.conversation_id == session.conversation_id
        assert [i.transcripts.get(0) for i in snapshot.items if i.role == "assistant"] == [
            "You said: hello there",
            "You said: and again",
        ]

    run(body())


HANDOFF = Scenario.from_mapping(
    {
        "rules": [
            {"instructions": "triage", "match": "refund", "handoff": "billing"},
            {"instructions": "billing", "match": "refund", "say": "Refunds take five days."},
        ],
        "fallback": "You said: {text}",
    }
)


def test_the_active_agent_is_recorded_and_restored(backend: Backend) -> None:
    billing = RealtimeAgent(name="billing", instructions="billing")
    triage = RealtimeAgent(name="triage", instructions="triage", handoffs=[billing])

    async def body() -> None:
        store = await backend.open()
        async with serving(scenario=HANDOFF) as server:
            options = {"url": server.url(), "config": MANUAL}
            async with RealtimeSession(triage, store=store, conversation_id="c", **options) as s:
                await ask(s, "I want a refund")
            assert (await store.load("c")).agent == "billing"
            async with RealtimeSession.resume(store, "c", agent=triage, **options) as resumed:
                assert resumed.agent is billing
                await ask(resumed, "a refund, please")
            with pytest.raises(ConfigurationError, match=r"'billing'.*agents="):
                async with RealtimeSession.resume(store, "c", **options):
                    pass
        await store.close()

    run(body())


def test_a_failing_store_is_reported_and_the_session_goes_on(tmp_path: Path) -> None:
    async def body() -> None:
        store = await SQLiteStore.open(tmp_path / "c.db")
        async with (
            serving(scenario=SCENARIO) as server,
            RealtimeSession(url=server.url(), config=MANUAL, store=store) as session,
        ):
            await store.close()  # every write fails from now on
            events = await ask(session, "hello there")
            errors = [e for e in of_type(events, ErrorEvent) if e.source == "store"]
            assert errors
            assert "writing the conversation to the store failed" in errors[0].message
            assert session.snapshot().items[-1].transcripts == {0: "You said: hello there"}
        assert_only_current_task()

    run(body())


def test_misuse_is_said_at_once(tmp_path: Path) -> None:
    async def body() -> None:
        store = await SQLiteStore.open(tmp_path / "c.db")
        await store.create("used")
        await store.put_item("used", SessionSnapshot.from_json(_ONE_ITEM).items[0])
        async with serving(scenario=SCENARIO) as server:
            with pytest.raises(ConversationExists, match=r"RealtimeSession.resume\(store, 'used'"):
                async with RealtimeSession(url=server.url(), store=store, conversation_id="used"):
                    pass
        with pytest.raises(ConfigurationError, match="needs the conversation_id"):
            RealtimeSession.resume(store)
        with pytest.raises(
            ConfigurationError, match=r"expected a voxwire\.store\.ConversationStore"
        ):
            RealtimeSession(store="conversations.db")  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match="is of conversation 'used'"):
            RealtimeSession.resume(_ONE_ITEM, "other")
        await store.close()

    run(body())


_ONE_ITEM = (
    '{"conversation_id":"used","version":1,"created_at":"2025-01-02T03:04:05Z",'
    '"updated_at":"2025-01-02T03:04:05Z","items":[{"id":"item_1","position":0,'
    '"wire":{"id":"item_1","type":"message","role":"user","content":[{"type":"input_text",'
    '"text":"hi"}]}}]}'
)
