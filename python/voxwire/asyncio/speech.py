"""Speech handles: what the application holds of one response it (or the server) started.

``say()`` and ``create_response()`` return a :class:`SpeechHandle` at once; every conversation
response has one, carried by its ``speech_created`` event (responses server VAD started, and the
follow-ups the session asks for after tools, too — those with ``user_initiated=False``). Await
the handle (or :meth:`SpeechHandle.wait_for_playout`) to learn when the speech is over:

* with an audio output attached, once its response is done and every part of its audio has
  left the playback clock (the device took it) — or was cut by an interruption;
* without one, at the response's ``response.done`` (the application plays the audio itself and
  knows better; what it reports through ``interrupt(played_samples)`` still counts);
* at once, with :attr:`SpeechHandle.error` set, if the server refused the request or the
  session closed first.

Then :attr:`SpeechHandle.interrupted` says whether it was cut (by the user's speech,
``interrupt()``, an output guardrail, a lost connection) and :attr:`SpeechHandle.played_ms` how
much of its audio was heard: the truncation the session sent for each cut part (exactly what
the listener heard, with an audio output), all of an uncut part, 0 for a part deleted unheard.

Which response answers which request is the protocol core's decision: each request carries the
handle's id as a tag (``send_response_create(tags=...)``), and the response that answers it
carries the tag (``ResponseRecord.tags``) — also when requests coalesce (both handles follow the
one response), when server VAD wins the race (the handle moves to the response asked for
again) and across a reconnection.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from voxwire.asyncio import events as ev
from voxwire.protocol import server_events as se
from voxwire.protocol.audio_ledger import SegmentKey
from voxwire.protocol.protocol import RealtimeProtocol

if TYPE_CHECKING:
    from voxwire.asyncio.playback import PlaybackMonitor

__all__ = ["SpeechHandle", "SpeechTracker"]


_APPLICATION_SOURCES: Final = frozenset({"response", "say"})


class SpeechHandle:
    """One speech: a response the application asked for (``user_initiated``) or one the server
    or the session started. Awaiting it waits until it was played or interrupted (see the module
    docstring); it need not be awaited."""

    def __init__(
        self,
        speech_id: str,
        source: ev.SpeechSource,
        *,
        user_initiated: bool,
        tagged: bool = False,
    ) -> None:
        self.id = speech_id
        #: The request carried the id as its tag (``say()``, ``create_response()``).
        self.tagged = tagged
        self.source: ev.SpeechSource = source
        self.user_initiated = user_initiated
        self.response_id: str | None = None
        """The response that speaks it, from its ``response.created`` on."""
        self.status: str | None = None
        """The response's final status: ``completed``, ``cancelled``, ``incomplete``, ``failed``."""
        self.interrupted = False
        self.played_ms: int | None = None
        """Milliseconds of its audio heard, once done (``None``: it had no audio)."""
        self.error: str | None = None
        """Why no response spoke it (the server refused the request, the session closed)."""
        self._future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._callbacks: list[Callable[[SpeechHandle], None]] = []

    def __repr__(self) -> str:
        state = "done" if self.done() else "pending"
        return f"<SpeechHandle {self.id} {self.source} {state} response={self.response_id}>"

    def done(self) -> bool:
        """Played out, interrupted or failed."""
        return self._future.done()

    def add_done_callback(self, callback: Callable[[SpeechHandle], None]) -> None:
        """Call ``callback(handle)`` once it is done (at once if it is)."""
        if self.done():
            callback(self)
        else:
            self._callbacks.append(callback)

    async def wait_for_playout(self) -> SpeechHandle:
        """Wait until it is done; returns the handle. Cancelling the wait leaves it alone."""
        await asyncio.shield(self._future)
        return self

    def __await__(self) -> Generator[Any, None, SpeechHandle]:
        return self.wait_for_playout().__await__()

    def _finish(self) -> None:
        if self.done():
            return
        self._future.set_result(None)
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)


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

    def request(self, source: ev.SpeechSource) -> SpeechHandle:
        """A handle for a request the application makes now; its id is the request's tag."""
        speech_id = f"speech_{next(self._count)}"
        handle = SpeechHandle(speech_id, source, user_initiated=True, tagged=True)
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
                    handle._finish()

    def close(self, reason: str) -> None:
        """The session is over: every handle not done yet ends with ``error`` = ``reason``."""
        pending = list(self._requested.values())
        pending += [h for handles in self._bound.values() for h in handles]
        self._requested.clear()
        self._bound.clear()
        for handle in pending:
            if not handle.done():
                handle.error = reason
                handle.interrupted = handle.response_id is not None
                handle._finish()

    def _created(self, event: se.ResponseCreated) -> None:
        response_id = event.response.id
        record = self._protocol().responses.get(response_id) if response_id else None
        if record is None:
            return
        handles = [self._requested.pop(tag) for tag in record.tags if tag in self._requested]
        # The application asked for it (a message, create_response, say, a raw create) — not
        # server VAD (no source), nor the session after tools or a guardrail trip.
        asked = record.source in _APPLICATION_SOURCES
        if not handles and not record.out_of_band:
            speech_id = f"speech_{next(self._count)}"
            handles = [SpeechHandle(speech_id, record.source or "response", user_initiated=asked)]
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
            if handle.tagged and handle.id not in record.tags:
                # Server VAD won the race: the request is asked for again, the handle follows.
                handle.response_id = None
                self._requested[handle.id] = handle
            else:
                handle.status = event.response.status
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
            handle.played_ms = played
            handle.interrupted = cut or handle.status == "cancelled"
            handle._finish()
