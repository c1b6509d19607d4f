"""Speech handles: what the application holds of one response it (or the server) started.

``say()``, ``create_response()`` and ``send_message()`` return a :class:`SpeechHandle` at once;
every conversation response has one, carried by its ``speech_created`` event (responses server
VAD started, the follow-ups the session asks for after tools or guardrails, the answer input
guardrails let through, a raw ``response.create`` — those with ``user_initiated=False``). Await
the handle (or :meth:`SpeechHandle.wait_for_playout`) to learn when the speech is over:

* with an audio output attached, once its response is done and every part of its audio has
  left the playback clock (the device took it) — or was cut by an interruption;
* without one, at the response's ``response.done`` (the application plays the audio itself and
  knows better; what it reports through ``interrupt(played_samples)`` still counts);
* at once, with :attr:`SpeechHandle.error` set, if the server refused the request, the
  response failed (``status`` ``failed``; ``error`` carries the server's message) or the
  session closed first.

Then :attr:`SpeechHandle.interrupted` says whether it was cut (by the user's speech,
``interrupt()``, an output guardrail, a lost connection) and :attr:`SpeechHandle.played_ms` how
much of its audio was heard: the truncation the session sent for each cut part (exactly what
the listener heard, with an audio output), all of an uncut part, 0 for a part deleted unheard.

Which response answers which request is the protocol core's decision: each request carries the
handle's id as a tag (``send_response_create(tags=...)``), and the response that answers it
carries the tag (``ResponseRecord.tags``) — also when requests coalesce (both handles follow the
one response), when server VAD wins the race (the handle moves to the response asked for
again) and across a reconnection. The session's
:class:`~voxwire.asyncio.audio.speech_tracker.SpeechTracker` makes, binds and settles the handles.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any

from voxwire.protocol.gate import ResponseSource

__all__ = ["SpeechHandle"]


class SpeechHandle:
    """One speech: a response the application asked for (``user_initiated``) or one the server
    or the session started. Awaiting it waits until it was played or interrupted (see the module
    docstring); it need not be awaited."""

    def __init__(
        self,
        speech_id: str,
        source: ResponseSource,
        *,
        user_initiated: bool,
    ) -> None:
        self.id = speech_id
        self.source: ResponseSource = source
        self.user_initiated = user_initiated
        self.response_id: str | None = None
        """The response that speaks it, from its ``response.created`` on."""
        self.status: str | None = None
        """The response's final status: ``completed``, ``cancelled``, ``incomplete``, ``failed``."""
        self.interrupted = False
        self.played_ms: int | None = None
        """Milliseconds of its audio heard, once done (``None``: it had no audio)."""
        self.error: str | None = None
        """Why no response spoke it (the server refused the request, the response failed —
        with the server's message —, the session closed)."""
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

    def settle(self) -> None:
        """Mark it done and call the done callbacks (the session's tracker does this)."""
        if self.done():
            return
        self._future.set_result(None)
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)
