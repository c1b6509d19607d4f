"""G.711 from Python: every input against a reference built from the standard's tables (numpy,
vectorised), input and output types, errors. The Rust tests cover the same exhaustively in the
core; this checks the binding end to end and cross-checks with ``audioop`` where it exists."""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType

import numpy as np
import numpy.typing as npt
import pytest

from voxwire.audio import g711

ALL_PCM = np.arange(-32768, 32768, dtype=np.int32).astype(np.int16)
ALL_CODES = np.arange(256, dtype=np.uint8)

# ITU-T G.711 Tables 2a (µ-law, 14-bit units) and 1a (A-law, 12-bit magnitude units):
# (first decision value, step) of segments 0..7; 16 intervals per segment.
ULAW_SEGMENTS = [
    (-1, 2),
    (31, 4),
    (95, 8),
    (223, 16),
    (479, 32),
    (991, 64),
    (2015, 128),
    (4063, 256),
]
ALAW_SEGMENTS = [(0, 1), (16, 1), (32, 2), (64, 4), (128, 8), (256, 16), (512, 32), (1024, 64)]


def thresholds(segments: list[tuple[int, int]]) -> npt.NDArray[np.int64]:
    return np.array([start + j * step for start, step in segments for j in range(16)])


def sign_magnitude(x: npt.NDArray[np.int16]) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
    # ITU-T G.191 convention: a negative sample's magnitude is -(x + 1).
    x64 = x.astype(np.int64)
    return x64 < 0, np.where(x64 < 0, -(x64 + 1), x64)


def ref_ulaw_encode(x: npt.NDArray[np.int16]) -> npt.NDArray[np.uint8]:
    neg, mag = sign_magnitude(x)
    n = np.searchsorted(thresholds(ULAW_SEGMENTS), mag >> 2, side="right") - 1
    return np.where(neg, 0x7F ^ n, 0xFF ^ n).astype(np.uint8)


def ref_alaw_encode(x: npt.NDArray[np.int16]) -> npt.NDArray[np.uint8]:
    neg, mag = sign_magnitude(x)
    n = np.searchsorted(thresholds(ALAW_SEGMENTS), mag >> 4, side="right") - 1
    return np.where(neg, n ^ 0x55, (0x80 | n) ^ 0x55).astype(np.uint8)


def ref_ulaw_decode(codes: npt.NDArray[np.uint8]) -> npt.NDArray[np.int16]:
    thr = np.append(thresholds(ULAW_SEGMENTS), 8159)
    n = (~codes & 0x7F).astype(np.int64)
    mid = np.where(n == 0, 0, (thr[n] + thr[n + 1]) // 2 * 4)
    return np.where(codes & 0x80, mid, -mid).astype(np.int16)


def ref_alaw_decode(codes: npt.NDArray[np.uint8]) -> npt.NDArray[np.int16]:
    c = (codes ^ 0x55).astype(np.int64)
    n = c & 0x7F
    steps = np.array([step for _, step in ALAW_SEGMENTS])[n // 16]
    mid = (2 * thresholds(ALAW_SEGMENTS)[n] + steps) * 8
    return np.where(c & 0x80, mid, -mid).astype(np.int16)


def test_encode_matches_the_reference_for_every_sample() -> None:
    for encode, ref in ((g711.ulaw_encode, ref_ulaw_encode), (g711.alaw_encode, ref_alaw_encode)):
        got = np.frombuffer(encode(ALL_PCM), dtype=np.uint8)
        expected = ref(ALL_PCM)
        bad = np.flatnonzero(got != expected)
        assert bad.size == 0, f"{encode.__name__}: first mismatch at x={ALL_PCM[bad[0]]}"


def test_decode_matches_the_reference_for_every_code() -> None:
    np.testing.assert_array_equal(g711.ulaw_decode(ALL_CODES.tobytes()), ref_ulaw_decode(ALL_CODES))
    np.testing.assert_array_equal(g711.alaw_decode(ALL_CODES.tobytes()), ref_alaw_decode(ALL_CODES))
    # The classic tables' first entries and extremes.
    assert g711.ulaw_decode(bytes([0x00, 0x01, 0x0F, 0x7F, 0x80, 0xFF])).tolist() == [
        -32124,
        -31100,
        -16764,
        0,
        32124,
        0,
    ]
    assert g711.alaw_decode(bytes([0x00, 0x01, 0x2A, 0x55, 0xAA, 0xD5])).tolist() == [
        -5504,
        -5248,
        -32256,
        -8,
        32256,
        8,
    ]


def _audioop() -> ModuleType:
    # audioop (Sun's g711 code) exists up to Python 3.12: an independent implementation.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return importlib.import_module("audioop")
        except ImportError:
            pytest.skip("audioop was removed in Python 3.13")


def test_agrees_with_audioop_where_both_follow_g711() -> None:
    audioop = _audioop()
    raw = ALL_PCM.tobytes()
    assert g711.alaw_encode(raw) == audioop.lin2alaw(raw, 2)
    codes = ALL_CODES.tobytes()
    assert g711.ulaw_decode(codes).tobytes() == audioop.ulaw2lin(codes, 2)
    assert g711.alaw_decode(codes).tobytes() == audioop.alaw2lin(codes, 2)
    # Sun's µ-law encoder negates negative samples (-x, not ~x), so it differs from the ITU
    # reference for the 4 negative inputs at each of the 127 decision levels; elsewhere (and
    # for every x >= 0) the two agree.
    ours = np.frombuffer(g711.ulaw_encode(raw), dtype=np.uint8)
    sun = np.frombuffer(audioop.lin2ulaw(raw, 2), dtype=np.uint8)
    differ = ALL_PCM[ours != sun]
    assert len(differ) == 4 * 127
    assert (differ < 0).all()


def test_input_and_output_types() -> None:
    x = ALL_PCM[::97]
    expected = g711.ulaw_encode(x)
    assert isinstance(expected, bytes)
    assert len(expected) == len(x)
    raw = x.tobytes()
    for pcm in (raw, bytearray(raw), memoryview(raw), np.repeat(x, 2)[::2]):
        assert g711.ulaw_encode(pcm) == expected
    decoded = g711.ulaw_decode(expected)
    assert decoded.dtype == np.int16
    assert decoded.shape == (len(x),)
    codes = np.frombuffer(expected, dtype=np.uint8)
    for data in (bytearray(expected), memoryview(expected), codes, np.repeat(codes, 2)[::2]):
        np.testing.assert_array_equal(g711.ulaw_decode(data), decoded)
    assert g711.alaw_encode(b"") == b""
    assert g711.alaw_decode(b"").shape == (0,)


def test_bad_inputs_say_what_to_pass() -> None:
    with pytest.raises(ValueError, match="even number of bytes"):
        g711.ulaw_encode(b"\x00\x01\x02")
    with pytest.raises(TypeError, match="dtype float32"):
        g711.alaw_encode(np.zeros(4, np.float32))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="1-D numpy uint8 array, got a numpy array of dtype int16"):
        g711.ulaw_decode(np.zeros(4, np.int16))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got str"):
        g711.alaw_decode("abc")  # type: ignore[arg-type]
