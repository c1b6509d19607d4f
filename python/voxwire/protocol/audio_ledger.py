"""Which output audio arrived for which item, and how much.

Every ``response.output_audio.delta`` names its ``item_id`` and ``content_index``; the ledger
keeps one :class:`AudioSegment` per such pair, counting bytes as they arrive. Interruption
needs exactly this: a ``conversation.item.truncate`` may not claim more audio than was received
(the GA server rejects an ``audio_end_ms`` beyond the item's audio), and the playback clock
reports samples played per (item, content) segment.

A delta for an item the conversation has not announced yet still gets a segment (keyed the same
way): the audio is real and the item may be announced later.

Segments whose audio is complete are kept for the :data:`DONE_KEPT` most recent ones: an
interruption cuts what plays now and a speech handle settles once its response is played out, so
only recent segments matter, and a long session would otherwise keep one per part it ever heard.
A segment still streaming is always kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from voxwire.protocol.units import SampleFormat, bytes_to_samples, samples_to_ms

__all__ = ["DONE_KEPT", "AudioLedger", "AudioSegment", "SegmentKey"]

#: Segments whose audio is complete that the ledger keeps, the most recent ones.
DONE_KEPT: Final = 64

#: ``(item_id, content_index)``: the unit the server streams and the playback clock counts.
SegmentKey = tuple[str, int]


@dataclass
class AudioSegment:
    """The output audio received for one content part of one item."""

    item_id: str
    content_index: int
    response_id: str
    sample_format: SampleFormat
    received_bytes: int = 0
    done: bool = False
    """``response.output_audio.done`` arrived: no more audio will come for this part."""
    truncated_at_ms: int | None = None
    """Set when the server confirms a truncation (``conversation.item.truncated``)."""

    @property
    def key(self) -> SegmentKey:
        return (self.item_id, self.content_index)

    @property
    def received_samples(self) -> int:
        return bytes_to_samples(self.received_bytes, self.sample_format)

    @property
    def received_ms(self) -> int:
        return samples_to_ms(self.received_samples, self.sample_format)


class AudioLedger:
    """All audio segments of a session, in the order their first delta arrived."""

    def __init__(self) -> None:
        self._segments: dict[SegmentKey, AudioSegment] = {}
        self._done: dict[SegmentKey, None] = {}  # keys of complete segments, oldest first

    def __contains__(self, key: object) -> bool:
        return key in self._segments

    def get(self, key: SegmentKey) -> AudioSegment | None:
        return self._segments.get(key)

    def segments(self) -> list[AudioSegment]:
        return list(self._segments.values())

    def received(
        self, key: SegmentKey, response_id: str, n_bytes: int, sample_format: SampleFormat
    ) -> AudioSegment:
        """Count ``n_bytes`` more audio for ``key`` (the first delta fixes the sample format)."""
        segment = self._segments.get(key)
        if segment is None:
            segment = AudioSegment(
                item_id=key[0],
                content_index=key[1],
                response_id=response_id,
                sample_format=sample_format,
            )
            self._segments[key] = segment
        segment.received_bytes += n_bytes
        return segment

    def audio_done(self, key: SegmentKey) -> None:
        segment = self._segments.get(key)
        if segment is not None:
            segment.done = True
            self._complete(key)

    def response_done(self, response_id: str) -> None:
        """The response is over: no more audio comes for its segments (``done`` stays as the
        wire said; this only lets them go once they are old)."""
        for key in [k for k, s in self._segments.items() if s.response_id == response_id]:
            self._complete(key)

    def _complete(self, key: SegmentKey) -> None:
        self._done.pop(key, None)
        self._done[key] = None
        while len(self._done) > DONE_KEPT:
            oldest = next(iter(self._done))
            del self._done[oldest]
            self._segments.pop(oldest, None)

    def truncated(self, key: SegmentKey, audio_end_ms: int) -> None:
        segment = self._segments.get(key)
        if segment is not None:
            segment.truncated_at_ms = audio_end_ms

    def forget_item(self, item_id: str) -> None:
        """Drop the segments of a deleted item."""
        for key in [key for key in self._segments if key[0] == item_id]:
            del self._segments[key]
            self._done.pop(key, None)
