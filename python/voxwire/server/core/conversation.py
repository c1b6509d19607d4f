"""The conversation the server holds: items in order, their audio, and the rules for changing it.

Items are the protocol core's typed records. The server keeps audio out of the items it announces
(``conversation.item.added`` carries ``input_audio`` with ``transcript: null`` and no audio, as the
real service does) and keeps it here, per ``(item_id, content_index)``, for
``conversation.item.retrieve`` and ``conversation.item.truncate``.

Audio is kept within a budget (``audio_budget_bytes``, :data:`DEFAULT_AUDIO_BUDGET_BYTES`): when
the audio kept passes it, the audio of the oldest content parts is dropped — the part set last
and the part appended to last are always kept whole, so a response being streamed and played
can be truncated. A part whose audio
was dropped keeps its duration (input audio tokens are still counted from it) and its item keeps
its transcript; a truncate or retrieve that needs its audio gets an ``invalid_request_error``
saying so (:func:`audio_dropped`). ``None`` keeps all audio.

Every method that can fail raises :class:`~voxwire.server.core.errors.ServerError` with the real
service's code and leaves the conversation unchanged.
"""

from __future__ import annotations

from typing import Final

import msgspec

from voxwire.protocol import (
    ROOT,
    FunctionCallItem,
    FunctionCallOutputItem,
    InputAudio,
    Item,
    MessageItem,
    OutputAudio,
    samples_to_ms,
)
from voxwire.protocol.units import SampleFormat
from voxwire.server.core.errors import ServerError

__all__ = ["DEFAULT_AUDIO_BUDGET_BYTES", "MAX_CLIENT_ITEM_ID_CHARS", "ServerConversation"]

#: GA reference: client-made item ids may be up to 32 characters.
MAX_CLIENT_ITEM_ID_CHARS: Final = 32

#: Item audio a conversation keeps by default: 32 MiB, about 11 minutes of 24 kHz PCM16.
DEFAULT_AUDIO_BUDGET_BYTES: Final = 32 * 1024 * 1024

_Key = tuple[str, int]


class _Audio:
    """Audio of one content part, in the wire format it was sent or received in; ``data`` is
    ``None`` once dropped for the budget (the duration stays)."""

    __slots__ = ("data", "dropped_ms", "sample_format")

    def __init__(self, data: bytes, sample_format: SampleFormat) -> None:
        self.data: bytearray | None = bytearray(data)  # appended to in place, not copied
        self.sample_format = sample_format
        self.dropped_ms = 0

    @property
    def duration_ms(self) -> int:
        if self.data is None:
            return self.dropped_ms
        return samples_to_ms(
            len(self.data) // self.sample_format.bytes_per_sample, self.sample_format
        )

    def drop(self) -> int:
        """Drop the samples, keep the duration; returns the bytes freed."""
        freed = len(self.data) if self.data is not None else 0
        self.dropped_ms = self.duration_ms
        self.data = None
        return freed


def audio_dropped(item_id: str, content_index: int, budget_bytes: int | None) -> ServerError:
    """The error for a truncate or retrieve that needs audio the budget dropped."""
    return ServerError(
        "invalid_value",
        f"The audio of item '{item_id}' (content_index {content_index}) is no longer kept: this "
        f"server keeps the most recent {budget_bytes} bytes of item audio and the item's "
        "transcript (RealtimeServer(audio_budget_bytes=...) keeps more). Truncate audio while "
        "it plays; read an old item's text from its transcript.",
        param="item_id",
    )


class ServerConversation:
    """Ordered items plus their audio (within ``audio_budget_bytes``); no I/O."""

    def __init__(self, audio_budget_bytes: int | None = DEFAULT_AUDIO_BUDGET_BYTES) -> None:
        self._order: list[str] = []
        self._items: dict[str, Item] = {}
        self._audio: dict[_Key, _Audio] = {}
        self._budget = audio_budget_bytes
        self._kept: dict[_Key, None] = {}  # parts holding samples, oldest first
        self._kept_bytes = 0
        self._last_set: _Key | None = None
        self._last_appended: _Key | None = None
        # The function calls by call_id, each with its insertion number (the scan this look-up
        # replaced returned the first inserted): the call a function output answers is found
        # without a scan of the conversation (a replay of n items was quadratic).
        self._insertions = 0
        self._inserted: dict[str, int] = {}
        self._calls: dict[str, dict[str, int]] = {}

    @property
    def audio_kept_bytes(self) -> int:
        """Bytes of item audio held now (at most the budget, or the newest part if larger)."""
        return self._kept_bytes

    # --- reading ----------------------------------------------------------------------------------

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._items

    def __len__(self) -> int:
        return len(self._order)

    @property
    def last_id(self) -> str | None:
        return self._order[-1] if self._order else None

    def items(self) -> list[Item]:
        return [self._items[item_id] for item_id in self._order]

    def get(self, item_id: str) -> Item:
        item = self._items.get(item_id)
        if item is None:
            raise ServerError(
                "item_not_found",
                f"Conversation item with id '{item_id}' does not exist.",
                param="item_id",
            )
        return item

    def previous_of(self, item_id: str) -> str | None:
        index = self._order.index(item_id)
        return self._order[index - 1] if index else None

    def function_call(self, call_id: str) -> FunctionCallItem | None:
        """The function call item with ``call_id`` (of several, the first inserted), if any."""
        calls = self._calls.get(call_id)
        if not calls:
            return None
        item = self._items[min(calls, key=calls.__getitem__)]
        assert isinstance(item, FunctionCallItem)
        return item

    def audio_duration_ms(self, item_id: str, content_index: int) -> int:
        audio = self._audio.get((item_id, content_index))
        return audio.duration_ms if audio is not None else 0

    def with_audio(self, item_id: str) -> Item:
        """The item as ``conversation.item.retrieved`` shows it: audio parts hold their audio."""
        item = self.get(item_id)
        if not isinstance(item, MessageItem):
            return item
        content = []
        for index, part in enumerate(item.content):
            audio = self._audio.get((item_id, index))
            if audio is not None and isinstance(part, InputAudio | OutputAudio):
                if audio.data is None:
                    raise audio_dropped(item_id, index, self._budget)
                part = msgspec.structs.replace(part, audio=bytes(audio.data))
            content.append(part)
        return msgspec.structs.replace(item, content=content)

    # --- changing ---------------------------------------------------------------------------------

    def check_insert(self, item_id: str, previous_item_id: str | None) -> None:
        """Raise the real service's error if ``item_id`` cannot go after ``previous_item_id``."""
        if item_id in self._items:
            raise ServerError(
                "item_already_exists",
                f"Item with id '{item_id}' already exists.",
                param="item.id",
            )
        if len(item_id) > MAX_CLIENT_ITEM_ID_CHARS:
            raise ServerError(
                "string_above_max_length",
                f"Invalid 'item.id': string too long. Expected a string with maximum length "
                f"{MAX_CLIENT_ITEM_ID_CHARS}, but got a string with length {len(item_id)} instead.",
                param="item.id",
            )
        if previous_item_id not in (None, ROOT) and previous_item_id not in self._items:
            raise ServerError(
                "previous_item_not_found",
                f"Previous item with id '{previous_item_id}' not found.",
                param="previous_item_id",
            )

    def check_function_output(self, item: Item) -> None:
        if isinstance(item, FunctionCallOutputItem) and self.function_call(item.call_id) is None:
            raise ServerError(
                "invalid_tool_call_id",
                f"Tool call ID '{item.call_id}' not found in conversation.",
                param="item.call_id",
            )

    def insert(self, item: Item, previous_item_id: str | None) -> str | None:
        """Insert ``item`` (which has an id) after ``previous_item_id`` (``None``: at the end,
        ``"root"``: at the start); returns the id of the item now before it."""
        assert item.id is not None
        self.check_insert(item.id, previous_item_id)
        if previous_item_id is None:
            position = len(self._order)
        elif previous_item_id == ROOT:
            position = 0
        elif self._order[-1] == previous_item_id:
            position = len(self._order)  # appending, the usual case (a replay): no scan
        else:
            position = self._order.index(previous_item_id) + 1
        self._order.insert(position, item.id)
        self._items[item.id] = item
        self._insertions += 1
        self._inserted[item.id] = self._insertions
        self._index_call(item)
        return self._order[position - 1] if position else None

    def replace(self, item: Item) -> None:
        """Update an item in place (a response finishing it, say)."""
        assert item.id is not None
        assert item.id in self._items
        self._unindex_call(item.id)
        self._items[item.id] = item
        self._index_call(item)

    def _index_call(self, item: Item) -> None:
        if isinstance(item, FunctionCallItem) and item.call_id is not None:
            assert item.id is not None
            self._calls.setdefault(item.call_id, {})[item.id] = self._inserted[item.id]

    def _unindex_call(self, item_id: str) -> None:
        item = self._items.get(item_id)
        if isinstance(item, FunctionCallItem) and item.call_id is not None:
            calls = self._calls[item.call_id]
            del calls[item_id]
            if not calls:
                del self._calls[item.call_id]

    def delete(self, item_id: str) -> None:
        item = self.get(item_id)
        self._unindex_call(item_id)
        self._order.remove(item_id)
        del self._items[item_id]
        del self._inserted[item_id]
        parts = len(item.content) if isinstance(item, MessageItem) else 0
        for index in range(parts):
            self._forget_audio((item_id, index))

    def set_audio(self, item_id: str, content_index: int, data: bytes, fmt: SampleFormat) -> None:
        key = (item_id, content_index)
        self._forget_audio(key)
        self._audio[key] = _Audio(data, fmt)
        self._kept[key] = None
        self._kept_bytes += len(data)
        self._last_set = key
        self._keep_budget()

    def append_audio(
        self, item_id: str, content_index: int, data: bytes, fmt: SampleFormat
    ) -> None:
        key = (item_id, content_index)
        audio = self._audio.get(key)
        if audio is None:
            self.set_audio(item_id, content_index, data, fmt)
        elif audio.data is None:  # dropped already: it stays so, and lasts longer
            audio.dropped_ms += samples_to_ms(len(data) // fmt.bytes_per_sample, fmt)
        else:
            audio.data += data
            self._kept_bytes += len(data)
        self._last_appended = key
        self._keep_budget()

    def _forget_audio(self, key: _Key) -> None:
        audio = self._audio.pop(key, None)
        if audio is not None and key in self._kept:
            del self._kept[key]
            self._kept_bytes -= audio.drop()

    def _keep_budget(self) -> None:
        """Drop the oldest parts' samples until the audio kept fits the budget — never those of
        the part set last or appended to last (a response streaming while user audio is
        committed: both can still be truncated or retrieved)."""
        if self._budget is None:
            return
        protected = (self._last_set, self._last_appended)
        while self._kept_bytes > self._budget:
            oldest = next((key for key in self._kept if key not in protected), None)
            if oldest is None:
                return
            del self._kept[oldest]
            self._kept_bytes -= self._audio[oldest].drop()

    def truncate(self, item_id: str, content_index: int, audio_end_ms: int) -> None:
        """Cut an assistant audio part at ``audio_end_ms`` and drop its transcript (GA: "ensure
        there is no text in the context that hasn't been heard by the user")."""
        item = self.get(item_id)
        if audio_end_ms < 0:
            raise ServerError(
                "integer_below_min_value",
                "Invalid 'audio_end_ms': integer below minimum value. Expected a value >= 0, "
                f"but got {audio_end_ms} instead.",
                param="audio_end_ms",
            )
        if not (
            isinstance(item, MessageItem)
            and item.role == "assistant"
            and 0 <= content_index < len(item.content)
            and isinstance(item.content[content_index], OutputAudio)
        ):
            raise ServerError(
                "unsupported_content_type", "Only model output audio messages can be truncated"
            )
        audio = self._audio.get((item_id, content_index))
        duration_ms = audio.duration_ms if audio is not None else 0
        if audio_end_ms > duration_ms:
            raise ServerError(
                "invalid_value",
                f"Audio content of {duration_ms}ms is already shorter than {audio_end_ms}ms",
            )
        if audio is not None:
            if audio.data is None:
                raise audio_dropped(item_id, content_index, self._budget)
            fmt = audio.sample_format
            keep_bytes = audio_end_ms * fmt.sample_rate_hz // 1000 * fmt.bytes_per_sample
            self._kept_bytes -= max(0, len(audio.data) - keep_bytes)
            del audio.data[keep_bytes:]
        content = list(item.content)
        content[content_index] = OutputAudio(transcript=None)
        self._items[item_id] = msgspec.structs.replace(item, content=content)
