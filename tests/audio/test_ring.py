"""PcmRing from Python: input types, zero-copy pops, counters, errors, and real threads."""

from __future__ import annotations

import collections
import itertools
import threading

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from voxwire.audio import PcmRing, PlaybackClock
from voxwire.exceptions import InvalidState

SAMPLES = np.arange(-500, 500, dtype=np.int16) * 31


def test_every_input_type_is_queued_as_the_same_samples() -> None:
    raw = SAMPLES.astype("<i2").tobytes()
    strided = np.repeat(SAMPLES, 2)[::2]
    for pcm in (raw, bytearray(raw), memoryview(raw), SAMPLES, strided):
        ring = PcmRing(2000)
        assert ring.push(pcm) == len(SAMPLES)
        got = ring.pop(5000)
        assert got.dtype == np.int16
        np.testing.assert_array_equal(got, SAMPLES)


def test_full_and_empty_are_counts_not_errors() -> None:
    ring = PcmRing(100)
    assert ring.push(SAMPLES[:150]) == 100
    assert ring.overrun_samples == 50
    assert (ring.readable_samples, ring.writable_samples, len(ring)) == (100, 0, 100)
    np.testing.assert_array_equal(ring.pop(1000), SAMPLES[:100])
    assert ring.pop(10).shape == (0,)
    assert (ring.pushed_samples, ring.consumed_samples) == (100, 100)


def test_pop_into_writes_in_place_and_pads_with_silence_only_when_asked() -> None:
    ring = PcmRing(64)
    ring.push(SAMPLES[:10])
    out = np.full(16, 7, dtype=np.int16)
    assert ring.pop_into(out) == 10
    np.testing.assert_array_equal(out[:10], SAMPLES[:10])
    assert (out[10:] == 7).all(), "without fill_silence the rest is untouched"
    assert ring.underrun_samples == 0

    ring.push(SAMPLES[:4])
    assert ring.pop_into(out, fill_silence=True) == 4
    np.testing.assert_array_equal(out, np.concatenate([SAMPLES[:4], np.zeros(12, np.int16)]))
    assert ring.underrun_samples == 12


def test_pop_into_accepts_a_mono_device_buffer_of_shape_n_by_1() -> None:
    # sounddevice hands the callback `outdata` of shape (frames, channels).
    ring = PcmRing(64)
    ring.push(SAMPLES[:8])
    outdata = np.zeros((8, 1), dtype=np.int16)
    assert ring.pop_into(outdata, fill_silence=True) == 8
    np.testing.assert_array_equal(outdata[:, 0], SAMPLES[:8])


@pytest.mark.parametrize(
    ("out", "error", "match"),
    [
        (np.zeros(4, np.float32), TypeError, "int16 array, got a numpy array of dtype float32"),
        (bytearray(8), TypeError, "got bytearray"),
        (np.zeros((4, 2), np.int16), ValueError, r"shape \(n,\) or \(n, 1\), got shape \(4, 2\)"),
        (np.zeros(8, np.int16)[::2], ValueError, "C-contiguous"),
    ],
)
def test_pop_into_refuses_what_it_cannot_fill(out: object, error: type, match: str) -> None:
    ring = PcmRing(8)
    ring.push(SAMPLES[:4])
    with pytest.raises(error, match=match):
        ring.pop_into(out)  # type: ignore[arg-type]
    assert ring.readable_samples == 4, "a refused call takes nothing"


def test_pop_into_refuses_a_read_only_array() -> None:
    out = np.zeros(4, np.int16)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="cannot be written"):
        PcmRing(8).pop_into(out)


def test_clear_drops_what_is_queued() -> None:
    ring = PcmRing(32)
    ring.push(SAMPLES[:20])
    ring.pop(5)
    assert ring.clear() == 15
    assert (ring.readable_samples, ring.writable_samples, ring.dropped_samples) == (0, 32, 15)


@pytest.mark.parametrize(
    ("capacity", "error", "match"),
    [
        (0, ValueError, r"capacity=0 samples is not allowed: expected 1..=67108864"),
        (-1, ValueError, r"capacity_samples=-1 is not allowed: expected 1..=67108864"),
        (2**26 + 1, ValueError, r"capacity=67108865 samples is not allowed"),
        (10**30, ValueError, r"capacity_samples=10{30} is not allowed"),
        ("64", TypeError, r"capacity_samples must be an int \(1..=67108864\), got str"),
        (64.0, TypeError, r"capacity_samples must be an int"),
    ],
)
def test_bad_capacity_names_the_value_and_the_range(
    capacity: object, error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        PcmRing(capacity)  # type: ignore[arg-type]


def test_bad_inputs_to_push_and_pop() -> None:
    ring = PcmRing(8)
    with pytest.raises(ValueError, match="even number of bytes"):
        ring.push(b"\x00\x01\x02")
    with pytest.raises(TypeError, match="dtype float64"):
        ring.push(np.zeros(4))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got list"):
        ring.push([1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_samples=-1 is not allowed: expected >= 0"):
        ring.pop(-1)
    assert ring.pushed_samples == 0


def test_halves_on_two_python_threads_deliver_every_sample_once_in_order() -> None:
    """A producer thread pushes a counting signal in uneven chunks as bytes (as decoded from the
    wire); a consumer thread drains it with pop_into like a device callback. The ring is small,
    so both sides keep meeting full and empty."""
    total = 400_000
    signal = (np.arange(total) % 65536).astype(np.uint16).view(np.int16)
    ring = PcmRing(1000)
    received = np.zeros(total, dtype=np.int16)
    errors: list[BaseException] = []

    def producer() -> None:
        try:
            sent = 0
            sizes = np.random.default_rng(1).integers(1, 1500, size=1000)
            for size in itertools.cycle(sizes):
                if sent == total:
                    return
                sent += ring.push(signal[sent : sent + int(size)].tobytes())
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    def consumer() -> None:
        try:
            got = 0
            buf = np.empty(480, dtype=np.int16)
            while got < total and not errors:
                n = ring.pop_into(buf)
                received[got : got + n] = buf[:n]
                got += n
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=producer), threading.Thread(target=consumer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    assert errors == []
    np.testing.assert_array_equal(received, signal)
    assert ring.pushed_samples == ring.consumed_samples == total
    assert ring.overrun_samples > 0, "the producer must have met a full ring"


class RingModel(RuleBasedStateMachine):
    """PcmRing against a deque, through the Python API (the Rust proptest covers the core)."""

    def __init__(self) -> None:
        super().__init__()
        self.capacity = 37
        self.ring = PcmRing(self.capacity)
        self.model: collections.deque[int] = collections.deque()
        self.overrun = 0
        self.underrun = 0

    @rule(values=st.lists(st.integers(-32768, 32767), max_size=50), as_bytes=st.booleans())
    def push(self, values: list[int], as_bytes: bool) -> None:
        arr = np.array(values, dtype=np.int16)
        n = self.ring.push(arr.tobytes() if as_bytes else arr)
        assert n == min(len(values), self.capacity - len(self.model))
        self.model.extend(values[:n])
        self.overrun += len(values) - n

    @rule(k=st.integers(0, 50))
    def pop(self, k: int) -> None:
        expected = [self.model.popleft() for _ in range(min(k, len(self.model)))]
        assert self.ring.pop(k).tolist() == expected

    @rule(k=st.integers(0, 50))
    def pop_into_with_silence(self, k: int) -> None:
        out = np.full(k, 1, dtype=np.int16)
        n = min(k, len(self.model))
        expected = [self.model.popleft() for _ in range(n)] + [0] * (k - n)
        assert self.ring.pop_into(out, fill_silence=True) == n
        assert out.tolist() == expected
        self.underrun += k - n

    @rule()
    def clear(self) -> None:
        assert self.ring.clear() == len(self.model)
        self.model.clear()

    @invariant()
    def counters_agree(self) -> None:
        assert self.ring.readable_samples == len(self.model)
        assert self.ring.writable_samples == self.capacity - len(self.model)
        assert self.ring.overrun_samples == self.overrun
        assert self.ring.underrun_samples == self.underrun


RingModel.TestCase.settings = settings(max_examples=80, stateful_step_count=40, deadline=None)
test_ring_matches_a_deque = RingModel.TestCase


def test_push_on_a_ring_fed_by_a_clock_says_what_to_do_instead() -> None:
    ring = PcmRing(16)
    PlaybackClock(ring, 24000)
    with pytest.raises(InvalidState, match=r"PlaybackClock.push\(item_id, content_index, pcm\)"):
        ring.push(SAMPLES[:4])
    with pytest.raises(InvalidState, match=r"PlaybackClock.interrupt\(\)"):
        ring.clear()
