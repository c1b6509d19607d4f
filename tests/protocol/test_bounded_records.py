"""What the protocol core keeps about responses and audio stays bounded over a long session,
and what it keeps is what the rules need: every response in progress, every segment still
streaming, and the most recent others."""

from __future__ import annotations

import json
from typing import Any

from voxwire.protocol import RealtimeProtocol
from voxwire.protocol.audio_ledger import DONE_KEPT
from voxwire.protocol.responses import FINISHED_KEPT


def frame(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, "event_id": "e", **fields})


def response(response_id: str, status: str = "in_progress") -> dict[str, Any]:
    return {"id": response_id, "object": "realtime.response", "status": status, "output": []}


def speak(protocol: RealtimeProtocol, n: int, *, done: bool = True) -> None:
    """Response ``r{n}`` with one audio item ``i{n}``: created, audio, (done)."""
    protocol.receive_text(frame("response.created", response=response(f"r{n}")))
    item = {"id": f"i{n}", "type": "message", "role": "assistant", "content": []}
    protocol.receive_text(frame("conversation.item.added", previous_item_id=None, item=item))
    common = {"response_id": f"r{n}", "item_id": f"i{n}", "output_index": 0, "content_index": 0}
    protocol.receive_text(frame("response.output_audio.delta", **common, delta="AAAA"))
    if done:
        protocol.receive_text(frame("response.output_audio.done", **common))
        protocol.receive_text(frame("response.done", response=response(f"r{n}", "completed")))


def test_finished_responses_and_complete_segments_are_kept_for_the_most_recent() -> None:
    protocol = RealtimeProtocol(beta=False)
    turns = 3 * max(FINISHED_KEPT, DONE_KEPT)
    for n in range(turns):
        speak(protocol, n)
    records = protocol.responses.all()
    assert [r.id for r in records] == [f"r{n}" for n in range(turns - FINISHED_KEPT, turns)]
    assert all(r.status == "completed" for r in records)
    segments = protocol.audio.segments()
    assert [s.item_id for s in segments] == [f"i{n}" for n in range(turns - DONE_KEPT, turns)]
    assert protocol.audio_received_samples(f"i{turns - 1}") == 1  # "AAAA": one sample


def test_a_response_in_progress_and_its_streaming_audio_are_never_dropped() -> None:
    protocol = RealtimeProtocol(beta=False)
    speak(protocol, 0, done=False)  # stays in progress; its segment streams
    for n in range(1, 3 * FINISHED_KEPT):
        protocol.receive_text(frame("response.created", response=response(f"r{n}")))
        protocol.receive_text(frame("response.done", response=response(f"r{n}", "completed")))
        speak(protocol, 1000 + n)  # finished ones around it
    assert protocol.responses.get("r0") is not None
    assert protocol.responses.get("r0").in_progress  # type: ignore[union-attr]
    assert ("i0", 0) in protocol.audio
    # Interrupting now still cuts it: the plan sees its segment and its response.
    sent = protocol.interrupt({("i0", 0): 1})
    assert [e.type for e in sent][:2] == ["response.cancel", "conversation.item.truncate"]
    # Stray events about responses never started are bounded too.
    for n in range(5 * FINISHED_KEPT):
        protocol.receive_text(
            frame(
                "response.output_audio_transcript.delta",
                response_id=f"stray{n}",
                item_id="x",
                output_index=0,
                content_index=0,
                delta="a",
            )
        )
    assert len(protocol.responses.all()) <= FINISHED_KEPT + 1


def test_a_done_response_whose_audio_done_never_came_lets_its_segment_go() -> None:
    protocol = RealtimeProtocol(beta=False)
    for n in range(3 * DONE_KEPT):
        speak(protocol, n, done=False)
        protocol.receive_text(frame("response.done", response=response(f"r{n}", "cancelled")))
    assert len(protocol.audio.segments()) == DONE_KEPT
