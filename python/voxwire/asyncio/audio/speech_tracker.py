"""``SpeechTracker``: the session part that makes, binds and settles speech handles
(:class:`~voxwire.asyncio.events.speech.SpeechHandle`, whose module docstring says when a handle is
done and what it reports) and emits ``speech_created``."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import voxwire.asyncio.events as ev
from voxwire.asyncio.events.speech import SpeechHandle
from voxwire.protocol import server_events as se
from voxwire.protocol.audio_ledger import SegmentKey
from voxwire.protocol.protocol import RealtimeProtocol

if TYPE_CHECKING:
    from voxwire.asyncio.audio.playback import PlaybackMonitor

__all__ = ["SpeechTracker"]


@dataclass(frozen=True)
class _Segment:
    key: SegmentKey
    received_ms: int


class SpeechTracker:
    """Makes, binds and settles the session's speech handles (a server-event consumer; it also
    emits ``speech_created``). ``protocol()`` gives the connection's core; ``playback`` is the
    session's playback monitor when an audio output is attached."""

    def __init__(
        self,
        protocol: Callable[[], RealtimeProtocol],
        emit: Callable[[ev.SessionEvent], None],
        playback: PlaybackMonitor | None,
    ) -> None:
        self._protocol = protocol
        self._emit = emit
        self._playback = playback
        self._count = itertools.count(1)
        self._requested: dict[str, SpeechHandle] = {}  # tag -> handle, not bound yet
        self._bound: dict[str, list[SpeechHandle]] = {}  # response_id -> handles
        self._playing: list[SpeechHandle] = []  # response done, audio still in the clock

    def request(self, source: ev.SpeechSource) -> SpeechHandle:
        """A handle for a request the application makes now (``user_initiated``); its id is
        the request's tag."""
        speech_id = f"speech_{next(self._count)}"
        handle = SpeechHandle(speech_id, source, user_initiated=True)
        self._requested[handle.id] = handle
        return handle

    def forget(self, handle: SpeechHandle) -> None:
        """The request was not sent after all (the caller raised)."""
        self._requested.pop(handle.id, None)

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        if isinstance(event, se.ResponseCreated):
            self._created(event)
        elif isinstance(event, se.ResponseDone):
            self._done(event)
        elif isinstance(event, se.ErrorEvent):
            for tag in self._protocol().failed_request_tags():
                handle = self._requested.pop(tag, None)
                if handle is not None:
                    handle.error = f"the server refused the request: {event.error.message}"
                    handle.settle()

    def close(self, reason: str) -> None:
        """The session is over: every handle not done yet ends with ``error`` = ``reason``."""
        pending = list(self._requested.values()) + self._playing
        pending += [h for handles in self._bound.values() for h in handles]
        self._requested.clear()
        self._bound.clear()
        self._playing.clear()
        for handle in pending:
            if not handle.done():
                handle.error = reason
                handle.interrupted = handle.response_id is not None
                handle.settle()

    def _created(self, event: se.ResponseCreated) -> None:
        response_id = event.response.id
        record = self._protocol().responses.get(response_id) if response_id else None
        if record is None:
            return
        handles = [self._requested.pop(tag) for tag in record.tags if tag in self._requested]
        # The application asked for it (say, create_response, send_message): its request
        # carried a handle's tag. Not server VAD, the session's follow-ups, nor the answer
        # input guardrails give a spoken turn.
        asked = any(handle.user_initiated for handle in handles)
        if not handles and not record.out_of_band:
            speech_id = f"speech_{next(self._count)}"
            handles = [SpeechHandle(speech_id, record.source or "response", user_initiated=False)]
        for handle in handles:
            handle.response_id = record.id
        if handles:
            self._bound[record.id] = handles
        if not record.out_of_band:
            self._emit(
                ev.SpeechCreatedEvent(
                    response_id=record.id,
                    source=record.source or "response",
                    user_initiated=asked,
                    handle=handles[0],
                )
            )

    def _done(self, event: se.ResponseDone) -> None:
        response_id = event.response.id
        handles = self._bound.pop(response_id, []) if response_id else []
        protocol = self._protocol()
        record = protocol.responses.get(response_id) if response_id else None
        if record is None or not handles:
            return
        settled = []
        for handle in handles:
            if handle.user_initiated and handle.id not in record.tags:
                # Server VAD won the race: the request is asked for again, the handle follows.
                handle.response_id = None
                self._requested[handle.id] = handle
            else:
                handle.status = event.response.status
                if handle.status == "failed":
                    details = event.response.status_details
                    why = details.explanation if details is not None else None
                    handle.error = f"the response failed: {why or 'the server gave no reason'}"
                settled.append(handle)
        segments = [
            _Segment(s.key, s.received_ms)
            for s in protocol.audio.segments()
            if s.response_id == response_id
        ]
        cut = record.interrupted or event.response.status == "cancelled"
        if self._playback is None or cut or not segments or not settled:
            self._settle(settled, segments)
        else:
            keys = tuple(s.key for s in segments)
            self._playing += settled
            self._playback.watch_played_out(keys, lambda: self._settle(settled, segments))

    def _settle(self, handles: list[SpeechHandle], segments: list[_Segment]) -> None:
        protocol = self._protocol()
        pending_truncates = {
            (t.item_id, t.content_index): t.audio_end_ms
            for t in protocol.unacknowledged_item_truncates
        }
        pending_deletes = {d.item_id for d in protocol.unacknowledged_item_deletes}
        played: int | None = None
        cut = False
        for segment in segments:
            heard = segment.received_ms
            ledger = protocol.audio.get(segment.key)
            if segment.key in pending_truncates:
                heard, cut = pending_truncates[segment.key], True
            elif ledger is not None and ledger.truncated_at_ms is not None:
                heard, cut = ledger.truncated_at_ms, True
            elif segment.key[0] in pending_deletes or protocol.conversation.is_deleted(
                segment.key[0]
            ):
                heard, cut = 0, True
            played = (played or 0) + min(heard, segment.received_ms)
        for handle in handles:
            if handle in self._playing:
                self._playing.remove(handle)
            handle.played_ms = played
            handle.interrupted = cut or handle.status == "cancelled"
            handle.settle()
