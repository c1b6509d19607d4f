"""One connection's input audio transcriptions: a task per committed item, owned here.

The engine (:mod:`voxwire.server.engines.transcribe`) turns audio into text off the event loop;
this module runs it for each ``TranscribeAudio`` command of the session, sends the resulting
``conversation.item.input_audio_transcription.*`` events, and lets a response wait for the
transcripts of its context (:meth:`Transcriptions.settle`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from websockets.exceptions import ConnectionClosed

from voxwire.protocol import (
    InputAudioTranscriptionFailed,
    MessageItem,
    ServerEvent,
    TranscriptionError,
)
from voxwire.server.core.session import TRANSCRIPTION_MISSING, ServerSession, TranscribeAudio
from voxwire.server.core.turn import Turn
from voxwire.server.engines.transcribe import (
    Transcriber,
    TranscriptionUnavailable,
    transcription_usage,
)

__all__ = ["Transcriptions"]

log = logging.getLogger("voxwire.server")

Send = Callable[[Sequence[ServerEvent]], Awaitable[None]]


class Transcriptions:
    """One connection's transcriptions: a task per committed item, owned and awaited here.

    ``transcriber=None``: the server has no engine, and every request fails at once with
    :data:`~voxwire.server.core.session.TRANSCRIPTION_MISSING` (what to install).
    """

    def __init__(self, session: ServerSession, send: Send, transcriber: Transcriber | None) -> None:
        self._session = session
        self._send = send
        self._transcriber = transcriber
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._done: dict[str, asyncio.Event] = {}

    async def start(self, request: TranscribeAudio) -> None:
        if self._transcriber is None:
            await self._send([self._failed(request, "transcription_unavailable", None)])
            return
        self._done[request.item_id] = asyncio.Event()
        self._tasks[request.item_id] = asyncio.create_task(
            self._run(self._transcriber, request), name=f"voxwire-transcribe-{request.item_id}"
        )

    async def _run(self, transcriber: Transcriber, request: TranscribeAudio) -> None:
        events: list[ServerEvent]
        try:
            try:
                transcript = await transcriber.transcribe(
                    request.audio,
                    request.format_type,
                    language=request.language,
                    prompt=request.prompt,
                )
            except TranscriptionUnavailable as exc:
                events = [self._failed(request, "transcription_unavailable", str(exc))]
            except Exception as exc:  # the engine's failure ends this item's transcription only
                log.exception("transcription of %s failed", request.item_id)
                events = [self._failed(request, "transcription_failed", f"{exc}")]
            else:
                usage = transcription_usage(request.model, transcript, request.prompt)
                events = self._session.transcribed(
                    request.item_id, request.content_index, list(transcript.pieces), usage
                )
            with contextlib.suppress(ConnectionClosed):
                await self._send(events)
        finally:
            # Only now may a response waiting for this transcript go on: its output must come
            # after the transcript's events.
            self._tasks.pop(request.item_id, None)
            done = self._done.pop(request.item_id, None)
            if done is not None:
                done.set()

    def _failed(
        self, request: TranscribeAudio, code: str, message: str | None
    ) -> InputAudioTranscriptionFailed:
        if message is None:
            message = TRANSCRIPTION_MISSING
        else:
            message = f"Input audio transcription failed: {message}"
        return InputAudioTranscriptionFailed(
            event_id=self._session.ids.event(),
            item_id=request.item_id,
            content_index=request.content_index,
            error=TranscriptionError(type="transcription_error", code=code, message=message),
        )

    async def settle(self, turn: Turn, wake: asyncio.Event) -> Turn:
        """``turn`` once the transcripts of its items are in (or ``wake`` is set: the response
        was cancelled), with those items as the conversation now holds them."""
        waited = {
            item.id
            for item in turn.items
            if isinstance(item, MessageItem) and item.id is not None and item.id in self._done
        }
        if not waited:
            return turn
        transcribed = asyncio.ensure_future(
            asyncio.gather(*(self._done[item_id].wait() for item_id in waited))
        )
        woken = asyncio.ensure_future(wake.wait())
        either: set[asyncio.Future[Any]] = {transcribed, woken}
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            transcribed.cancel()
            woken.cancel()
            await asyncio.gather(transcribed, woken, return_exceptions=True)
        conversation = self._session.conversation
        items = [
            conversation.get(item.id) if item.id in waited and item.id in conversation else item
            for item in turn.items
        ]
        return replace(turn, items=items)

    async def close(self) -> None:
        """Stop waiting for every transcription (the connection is closing); idempotent."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for done in self._done.values():
            done.set()
