"""Scripted GA server frames for state-machine tests (no event loop, no network)."""

from __future__ import annotations

import base64
import json
from typing import Any

from voxwire.protocol import RealtimeProtocol


class ScriptedServer:
    """Makes the text frames a GA server would send, with fresh event ids."""

    def __init__(self) -> None:
        self._count = 0

    def frame(self, event_type: str, **fields: Any) -> str:
        self._count += 1
        return json.dumps({"type": event_type, "event_id": f"event_{self._count}", **fields})

    def session_created(self, **session: Any) -> str:
        return self.frame(
            "session.created",
            session={"type": "realtime", "object": "realtime.session", "id": "sess_1", **session},
        )

    def session_updated(self, **session: Any) -> str:
        return self.frame("session.updated", session={"type": "realtime", **session})

    def item_added(
        self, item_id: str, previous_item_id: str | None, role: str = "user", **item: Any
    ) -> str:
        content = item.pop("content", [{"type": "input_text", "text": item_id}])
        return self.frame(
            "conversation.item.added",
            previous_item_id=previous_item_id,
            item={"id": item_id, "type": "message", "role": role, "content": content, **item},
        )

    def item_done(
        self, item_id: str, previous_item_id: str | None, role: str = "user", **item: Any
    ) -> str:
        added = json.loads(self.item_added(item_id, previous_item_id, role, **item))
        return self.frame(
            "conversation.item.done", previous_item_id=previous_item_id, item=added["item"]
        )

    def response_created(self, response_id: str) -> str:
        return self.frame(
            "response.created",
            response={
                "object": "realtime.response",
                "id": response_id,
                "status": "in_progress",
                "output": [],
            },
        )

    def response_done(self, response_id: str, status: str = "completed", **response: Any) -> str:
        return self.frame(
            "response.done",
            response={
                "object": "realtime.response",
                "id": response_id,
                "status": status,
                **response,
            },
        )

    def output_item_added(self, response_id: str, item_id: str, output_index: int = 0) -> str:
        return self.frame(
            "response.output_item.added",
            response_id=response_id,
            output_index=output_index,
            item={
                "id": item_id,
                "type": "message",
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            },
        )

    def _part(
        self, event_type: str, response_id: str, item_id: str, content_index: int, **fields: Any
    ) -> str:
        return self.frame(
            event_type,
            response_id=response_id,
            item_id=item_id,
            output_index=0,
            content_index=content_index,
            **fields,
        )

    def audio_delta(
        self, response_id: str, item_id: str, n_bytes: int, content_index: int = 0
    ) -> str:
        audio = base64.b64encode(bytes(n_bytes)).decode()
        return self._part(
            "response.output_audio.delta", response_id, item_id, content_index, delta=audio
        )

    def audio_done(self, response_id: str, item_id: str, content_index: int = 0) -> str:
        return self._part("response.output_audio.done", response_id, item_id, content_index)

    def transcript_delta(
        self, response_id: str, item_id: str, delta: str, content_index: int = 0
    ) -> str:
        return self._part(
            "response.output_audio_transcript.delta",
            response_id,
            item_id,
            content_index,
            delta=delta,
        )

    def transcript_done(
        self, response_id: str, item_id: str, transcript: str, content_index: int = 0
    ) -> str:
        return self._part(
            "response.output_audio_transcript.done",
            response_id,
            item_id,
            content_index,
            transcript=transcript,
        )

    def error(
        self, event_id: str | None, code: str = "invalid_request_error", message: str = "no"
    ) -> str:
        return self.frame(
            "error",
            error={
                "type": "invalid_request_error",
                "code": code,
                "message": message,
                "event_id": event_id,
            },
        )

    def deleted(self, item_id: str) -> str:
        return self.frame("conversation.item.deleted", item_id=item_id)

    def truncated(self, item_id: str, audio_end_ms: int, content_index: int = 0) -> str:
        return self.frame(
            "conversation.item.truncated",
            item_id=item_id,
            content_index=content_index,
            audio_end_ms=audio_end_ms,
        )


SECOND_OF_PCM16_BYTES = 48_000  # 24 000 samples


def feed(protocol: RealtimeProtocol, *frames: str) -> list[Any]:
    for frame in frames:
        protocol.receive_text(frame)
    return protocol.events_received()


def ga_turn_with_audio(server: ScriptedServer | None = None) -> RealtimeProtocol:
    """A user item ``item_u``, then response ``resp_a`` streaming 1 s of audio into ``item_a``
    (still in progress)."""
    server = server or ScriptedServer()
    protocol = RealtimeProtocol()
    feed(
        protocol,
        server.session_created(),
        server.item_added("item_u", None),
        server.response_created("resp_a"),
        server.output_item_added("resp_a", "item_a"),
        server.item_added("item_a", "item_u", role="assistant", status="in_progress", content=[]),
        server.transcript_delta("resp_a", "item_a", "Once upon "),
        server.audio_delta("resp_a", "item_a", SECOND_OF_PCM16_BYTES // 2),
        server.audio_delta("resp_a", "item_a", SECOND_OF_PCM16_BYTES // 2),
        server.transcript_delta("resp_a", "item_a", "a time"),
    )
    return protocol
