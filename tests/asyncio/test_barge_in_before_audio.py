"""A barge-in before an answer's first audio, end to end against the local server (issue 30).

The server's voice is held (tests/voices.py): the answer is announced (``response.created``,
``response.output_item.added``, ``conversation.item.added``) and has no audio when the user
interrupts. Nothing of it was heard, so the session deletes it, and neither the server's
conversation nor the session's history keeps words the user never heard.
"""

from __future__ import annotations

from tests.voices import HeldEngine
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import (
    AudioInterruptedEvent,
    ErrorEvent,
    RawServerEvent,
    SessionEvent,
)
from voxwire.audio import MemoryOutput
from voxwire.protocol import items
from voxwire.protocol.server_events import (
    ConversationItemDeleted,
    ConversationItemTruncated,
    ResponseOutputAudioDelta,
)

from .helpers import AUDIO_MANUAL, RATE_HZ, SLOW, all_done, poll, run, serving, until


def deleted(event: SessionEvent) -> bool:
    return isinstance(event, RawServerEvent) and isinstance(event.event, ConversationItemDeleted)


def answer_id(session: RealtimeSession) -> str | None:
    for item in session.protocol.conversation.items():
        if isinstance(item, items.MessageItem) and item.role == "assistant":
            return item.id
    return None


def test_an_answer_interrupted_before_its_audio_is_deleted_on_the_server() -> None:
    async def body() -> None:
        engine = HeldEngine()
        out = MemoryOutput(RATE_HZ, period_ms=10.0, latency_ms=0.0, prebuffer_ms=0.0)
        async with (
            serving(tts=engine, pacing=SLOW) as server,
            RealtimeSession(
                url=server.url(), config=AUDIO_MANUAL, audio_output=out, raw_server_events=True
            ) as session,
        ):
            await session.send_message("hello")
            await poll(lambda: answer_id(session) is not None)
            answer = answer_id(session)
            assert answer is not None
            assert session.protocol.audio_received_samples(answer) == 0
            await session.interrupt()
            engine.release.set()  # the voice speaks now; the server may send some of it
            # The cancelled response ends (response.done), then the delete is confirmed.
            events = await until(session, deleted)
            assert all_done(session)
            assert [e.event.item_id for e in events if deleted(e)] == [answer]
            cuts = [e for e in events if isinstance(e, AudioInterruptedEvent)]
            assert [(c.item_id, c.played_ms) for c in cuts] == [(answer, None)]
            raw = [e.event for e in events if isinstance(e, RawServerEvent)]
            assert not [r for r in raw if isinstance(r, ResponseOutputAudioDelta)]
            assert not [r for r in raw if isinstance(r, ConversationItemTruncated)]
            assert not [e for e in events if isinstance(e, ErrorEvent)]
            assert answer not in {item.item_id for item in session.history}
            (connection,) = server.connections
            assert answer not in connection.session.conversation
            assert out.output.ring.readable_samples == 0  # nothing of it reached the speaker

    run(body(), timeout_s=60)
