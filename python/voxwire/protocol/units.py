"""Sample, millisecond and byte conversions — the one place they happen.

The Realtime protocol counts audio in milliseconds (``audio_end_ms``, ``audio_start_ms``) while
the playback clock counts samples and the wire carries bytes. Mixing them silently is the classic
interruption bug (a truncate that claims more audio than was received), so every conversion goes
through the functions here and every quantity carries its unit in its name.

Wire formats (GA ``audio.*.format``):

* ``audio/pcm`` — 16-bit little-endian PCM, mono, 24 000 Hz: 2 bytes per sample.
* ``audio/pcmu`` / ``audio/pcma`` — G.711 µ-law / A-law, mono, 8 000 Hz: 1 byte per sample.
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = [
    "G711_8K",
    "PCM16_24K",
    "SampleFormat",
    "bytes_to_samples",
    "ms_to_samples",
    "samples_to_ms",
]


class SampleFormat(NamedTuple):
    """How a wire audio format maps bytes to samples and samples to time."""

    sample_rate_hz: int
    bytes_per_sample: int


#: ``audio/pcm`` (legacy name ``pcm16``).
PCM16_24K: Final = SampleFormat(sample_rate_hz=24_000, bytes_per_sample=2)
#: ``audio/pcmu`` and ``audio/pcma`` (legacy ``g711_ulaw`` / ``g711_alaw``).
G711_8K: Final = SampleFormat(sample_rate_hz=8_000, bytes_per_sample=1)


def bytes_to_samples(n_bytes: int, sample_format: SampleFormat) -> int:
    """Whole samples held in ``n_bytes`` (a trailing partial sample does not count)."""
    return n_bytes // sample_format.bytes_per_sample


def samples_to_ms(n_samples: int, sample_format: SampleFormat) -> int:
    """Milliseconds covered by ``n_samples``, rounded down.

    Rounding down is deliberate: ``conversation.item.truncate`` rejects an ``audio_end_ms`` longer
    than the item's audio, so a duration derived from samples must never overshoot them.
    """
    return n_samples * 1000 // sample_format.sample_rate_hz


def ms_to_samples(duration_ms: int, sample_format: SampleFormat) -> int:
    """Samples covered by ``duration_ms`` milliseconds, rounded down."""
    return duration_ms * sample_format.sample_rate_hz // 1000
