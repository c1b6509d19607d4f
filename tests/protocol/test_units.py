"""Sample / millisecond / byte conversions (one helper, rounding down)."""

from __future__ import annotations

import pytest

from voxwire.protocol import (
    G711_8K,
    PCM16,
    PCM16_24K,
    PCMA,
    PCMU,
    bytes_to_samples,
    ms_to_samples,
    samples_to_ms,
)


def test_pcm16_24k_is_two_bytes_per_sample() -> None:
    assert bytes_to_samples(960, PCM16_24K) == 480  # 20 ms
    assert samples_to_ms(480, PCM16_24K) == 20
    assert ms_to_samples(20, PCM16_24K) == 480


def test_g711_is_one_byte_per_sample_at_8k() -> None:
    assert bytes_to_samples(160, G711_8K) == 160
    assert samples_to_ms(160, G711_8K) == 20
    assert ms_to_samples(1860, G711_8K) == 14_880


@pytest.mark.parametrize(("samples", "ms"), [(0, 0), (23, 0), (24, 1), (47, 1), (24_023, 1000)])
def test_samples_to_ms_rounds_down(samples: int, ms: int) -> None:
    # A truncate point derived from samples must never claim audio that was not there.
    assert samples_to_ms(samples, PCM16_24K) == ms


def test_partial_trailing_sample_does_not_count() -> None:
    assert bytes_to_samples(961, PCM16_24K) == 480


def test_formats_map_to_their_sample_format() -> None:
    assert PCM16.sample_format == PCM16_24K
    assert PCMU.sample_format == G711_8K
    assert PCMA.sample_format == G711_8K
