"""Everything the application sends through a :class:`~voxwire.asyncio.RealtimeSession`:
audio, messages and images, response requests, ``say``, cancellations and interruptions,
session and history changes, raw client events.

Each method checks the session can send, hands the event to the protocol core (which queues the
frames and keeps the state the wire implies — a ``response.create`` goes through its response
gate, with the request's source) and awaits the pump's flush. A mixin of ``RealtimeSession``:
the public methods are the session's; this module only keeps ``session.py`` to its lifecycle,
parts and pump.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

import msgspec
import numpy as np
import numpy.typing as npt

import voxwire.asyncio.events as ev
from voxwire.asyncio.agents.input_guardrails import InputGuardrailRunner
from voxwire.asyncio.agents.switching import AgentSwitcher
from voxwire.asyncio.audio.inputs import audio_bytes
from voxwire.asyncio.audio.interruption import Interrupter
from voxwire.asyncio.audio.speech_tracker import SpeechTracker
from voxwire.asyncio.connection.pump import Pump
from voxwire.asyncio.connection.reconnect import SessionReconnecting
from voxwire.asyncio.errors import SessionClosed
from voxwire.asyncio.events.lifecycle import SessionState
from voxwire.asyncio.events.speech import SpeechHandle
from voxwire.asyncio.images import image_data_url
from voxwire.asyncio.observability.metrics import MetricsRecorder
from voxwire.exceptions import ConfigurationError, InvalidState
from voxwire.protocol.audio_ledger import SegmentKey
from voxwire.protocol.client_events import (
    ClientEvent,
    InputAudioBufferCommit,
    ResponseCreateParams,
    response_params,
)
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.items import ContentPart, InputImage, InputText, Item, MessageItem
from voxwire.protocol.protocol import RealtimeProtocol
from voxwire.protocol.say import say_instructions

__all__ = ["SessionSending"]

_RESPONSE_PARAMS: Final = frozenset(f.name for f in msgspec.structs.fields(ResponseCreateParams))


class SessionSending:
    """The sending half of :class:`~voxwire.asyncio.RealtimeSession` (see the module docstring)."""

    # Set up by RealtimeSession.
    _state: SessionState
    _protocol: RealtimeProtocol
    _pump: Pump
    _metrics: MetricsRecorder
    _interrupter: Interrupter
    _speech: SpeechTracker
    _muted: bool
    _muted_bytes: int
    _describe_close: Callable[[], str]
    _switcher: AgentSwitcher
    _input_guardrails: InputGuardrailRunner

    # --- sending ----------------------------------------------------------------------------------

    def _require_open(self) -> None:
        if self._state is SessionState.OPEN:
            return
        if self._state is SessionState.RECONNECTING:
            raise SessionReconnecting(
                "the session is reconnecting after the connection was lost: wait for the "
                "'reconnected' event and send again (or the 'close' event if it gives up)"
            )
        if self._state is SessionState.CLOSING:
            raise SessionClosed("the session is closing")
        if self._state is SessionState.CLOSED:
            raise SessionClosed(f"the session is closed ({self._describe_close()})")
        raise InvalidState(
            f"the session is {self._state.value}: use 'async with session' or await "
            "session.connect() first"
        )

    async def send_audio(
        self, pcm: bytes | bytearray | memoryview | npt.NDArray[np.int16], *, commit: bool = False
    ) -> None:
        """Append audio to the server's input buffer, in the session's input format (PCM16 24 kHz
        mono little-endian unless configured): bytes, or a 1-D numpy ``int16`` array. Dropped
        while muted, and while the session reconnects (the new server's input buffer starts
        empty). ``commit=True`` commits the buffer after it (turn detection off)."""
        if self._state is SessionState.RECONNECTING:
            audio_bytes(pcm)  # still checked: bad input is the caller's mistake either way
            return
        self._require_open()
        self._append_audio(audio_bytes(pcm))
        if commit:
            self._protocol.send_input_audio_commit()
            self._metrics.committed()
        await self._pump.flush()

    def _append_audio(self, data: bytes) -> None:
        """Into the input buffer, or counted and dropped while muted (``send_audio`` and the
        session's microphone)."""
        if self._muted:
            self._muted_bytes += len(data)
        elif data:
            self._protocol.send_input_audio(data)
            self._metrics.audio_sent(len(data))

    async def commit_audio(self) -> None:
        """Turn the input buffer into a user item (needed when turn detection is off)."""
        self._require_open()
        self._protocol.send_input_audio_commit()
        self._metrics.committed()
        await self._pump.flush()

    async def clear_audio(self) -> None:
        """Drop the audio in the server's input buffer."""
        self._require_open()
        self._protocol.send_input_audio_clear()
        await self._pump.flush()

    def mute(self, muted: bool = True) -> None:
        """Stop (or resume) forwarding audio: ``send_audio`` drops it while muted."""
        self._muted = bool(muted)

    async def send_message(
        self,
        message: str | list[ContentPart] | tuple[ContentPart, ...] | Item,
        *,
        trigger_response: bool = True,
    ) -> SpeechHandle | None:
        """Add a user message (text, content parts, or any item) and, by default, ask for a
        response. The request waits while a response is in progress and coalesces with other
        waiting requests: the session never causes ``conversation_already_has_active_response``.
        While the agent has input guardrails, the response is asked for once they passed.
        Returns the response's :class:`~voxwire.asyncio.SpeechHandle` when one was asked for
        here (``None``: no response asked for, or input guardrails hold the message).
        """
        self._require_open()
        if isinstance(message, str):
            item: Item = MessageItem(role="user", content=[InputText(text=message)])
        elif isinstance(message, list | tuple):
            item = MessageItem(role="user", content=list(message))
        else:
            item = message
        created = self._protocol.send_item_create(item)
        handle = None
        if trigger_response and not self._input_guardrails.hold_message(created.item):
            handle = self._tagged_request(None, "response")
        await self._pump.flush()
        return handle

    async def add_image(
        self,
        image: str | bytes | bytearray | memoryview,
        *,
        detail: Literal["auto", "low", "high"] | None = None,
        trigger_response: bool = True,
    ) -> SpeechHandle | None:
        """Add a user message holding one image — PNG, JPEG, WebP or GIF bytes (the type is read
        from them), or a ``data:image/...;base64,`` URL — and, by default, ask for a response
        (gated like :meth:`send_message`). Raises :class:`ConfigurationError` at once for
        another type, a link instead of a data URL, or more than
        :data:`~voxwire.asyncio.images.MAX_IMAGE_BYTES`."""
        self._require_open()
        part = InputImage(image_url=image_data_url(image), detail=detail)
        return await self.send_message([part], trigger_response=trigger_response)

    async def create_response(self, **params: Any) -> SpeechHandle:
        """Ask for a response (manual turn control), with per-response overrides — the fields
        of :class:`~voxwire.protocol.ResponseCreateParams` (``instructions``,
        ``output_modalities``, ``conversation="none"``, ``input``, ``metadata`` …). Gated like
        every other request. Returns its :class:`~voxwire.asyncio.SpeechHandle`: await it to
        wait until the response was played or interrupted (it need not be awaited)."""
        self._require_open()
        unknown = sorted(set(params) - _RESPONSE_PARAMS)
        if unknown:
            raise ConfigurationError(
                f"create_response() got unknown parameter(s) {', '.join(unknown)}: expected "
                + ", ".join(sorted(_RESPONSE_PARAMS))
            )
        try:
            request = response_params(params) if params else None
        except msgspec.ValidationError as exc:
            raise ConfigurationError(f"create_response(): {exc}") from exc
        return await self._speak(request, "response")

    async def say(self, text: str) -> SpeechHandle:
        """Make the assistant speak ``text``, word for word: a ``response.create`` (gated like
        every other request) whose instructions ask for exactly this text and no tool call
        (:func:`voxwire.protocol.say_instructions`). Its ``speech_created`` event has source
        ``"say"``. A model follows such instructions closely but is not bound by them; the local
        server says the text exactly. Returns its :class:`~voxwire.asyncio.SpeechHandle`
        (``await`` it to wait until the text was played or interrupted)."""
        self._require_open()
        params = ResponseCreateParams(instructions=say_instructions(text), tool_choice="none")
        return await self._speak(params, "say")

    async def _speak(
        self, params: ResponseCreateParams | None, source: ev.SpeechSource
    ) -> SpeechHandle:
        handle = self._tagged_request(params, source)
        await self._pump.flush()
        return handle

    def _tagged_request(
        self, params: ResponseCreateParams | None, source: ev.SpeechSource
    ) -> SpeechHandle:
        """A gated ``response.create`` the application asked for, tagged with a new speech
        handle's id (the response that answers it is ``user_initiated``)."""
        handle = self._speech.request(source)
        try:
            self._protocol.send_response_create(params, source=source, tags=(handle.id,))
        except BaseException:
            self._speech.forget(handle)
            raise
        return handle

    async def cancel_response(self) -> None:
        """Cancel the response in progress, if any (without truncating audio; see
        :meth:`interrupt`)."""
        self._require_open()
        self._protocol.send_response_cancel()
        await self._pump.flush()

    async def update_session(self, config: SessionConfig | Mapping[str, Any]) -> None:
        """Send a ``session.update`` (GA, legacy or camelCase shape). With a reconnect policy,
        the change is made again on the new server session after a reconnection (unless the
        server rejected it). While the agent has input guardrails, turn detection's
        ``create_response`` goes out off (the session answers once they passed) and
        :attr:`config` shows it as given."""
        self._require_open()
        self._protocol.send_session_update(self._switcher.application_update(config))
        await self._pump.flush()

    async def interrupt(
        self,
        played_samples: Mapping[SegmentKey, int] | None = None,
        *,
        cancel_response: bool = True,
    ) -> None:
        """The user interrupted: cancel the response, stop playback, and truncate each item to
        what was heard (delete items none of which was heard).

        What was heard comes from ``played_samples`` (``(item_id, content_index)`` → samples
        played, if the application plays audio itself), else from the attached audio output;
        with neither, everything received counts as heard.
        """
        self._require_open()
        self._interrupter.interrupt(played_samples, cancel_response=cancel_response)
        await self._pump.flush()

    async def update_history(self, items: Sequence[Item]) -> None:
        """Make the server's conversation ``items``: deletes and creates (see
        :meth:`~voxwire.protocol.RealtimeProtocol.update_history`); ``session.history``
        follows when the server confirms."""
        self._require_open()
        self._protocol.update_history(items)
        await self._pump.flush()

    async def send_raw(self, event: ClientEvent | Mapping[str, Any]) -> None:
        """Send any client event, typed or as a mapping, through the protocol core
        (:meth:`RealtimeProtocol.send <voxwire.protocol.RealtimeProtocol.send>`): its state
        follows and a raw ``response.create`` is gated like the session's own; a type the SDK
        does not know is sent as given."""
        self._require_open()
        try:
            sent = self._protocol.send(event)
        except ConfigurationError as exc:
            raise ConfigurationError(f"send_raw(): {exc}") from exc
        if isinstance(sent, InputAudioBufferCommit):
            self._metrics.committed()
        await self._pump.flush()

    def _request_response(
        self, params: ResponseCreateParams | None, source: ev.SpeechSource
    ) -> None:
        """A gated ``response.create``; the response that answers it carries ``source``
        (``speech_created``)."""
        self._protocol.send_response_create(params, source=source)
