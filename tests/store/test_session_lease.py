"""The session holds its conversation's lease: a second session on the same conversation —
new or resumed, in this process or another — is refused while the first lives, and takes it
once the first closed. Against the local server on loopback, on SQLite and PostgreSQL.

Needs the session to take the lease (voxwire.asyncio.persistence.recording:
``Persistence.take``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.asyncio.agent_helpers import ask
from tests.asyncio.helpers import MANUAL, run, serving
from tests.store.conftest import Backend
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
