"""Output jitter buffer benchmarks: voxwire's PcmRing side by side with the pure-Python buffers
a session would otherwise write (a ``bytearray`` and a ``collections.deque`` of chunks).

    pytest benches/test_bench_ring.py --benchmark-only --benchmark-group-by=group

One timed call is one 20 ms tick at 24 kHz in steady state: a 20 ms network chunk goes in (480
samples as ``bytes``, the form base64-decoded ``response.output_audio.delta`` audio arrives in),
two 10 ms device buffers come out into a preallocated numpy ``int16`` array (what a
``sounddevice`` callback fills), with 200 ms of audio buffered throughout. Every buffer delivers
the same samples (``test_buffers_deliver_the_same_samples``).

The pure-Python buffers run without the lock they would need with the producer and the device
callback on different threads; PcmRing is thread-safe as measured. That favours the peers.
"""

from __future__ import annotations

import collections
from typing import Protocol

import numpy as np
import numpy.typing as npt
import pytest

from voxwire.audio import PcmRing, PlaybackClock

RATE_HZ = 24000
CHUNK_20MS = RATE_HZ // 50
BUFFER_10MS = RATE_HZ // 100
BACKLOG_200MS = RATE_HZ // 5


class JitterBuffer(Protocol):
    def push(self, chunk: bytes) -> None: ...
    def pop_into(self, out: npt.NDArray[np.int16]) -> int: ...


class RingBuffer:
    """voxwire.audio.PcmRing: one copy in, one copy out, GIL released around both."""

    def __init__(self) -> None:
        self.ring = PcmRing(RATE_HZ)

    def push(self, chunk: bytes) -> None:
        self.ring.push(chunk)

    def pop_into(self, out: npt.NDArray[np.int16]) -> int:
        return self.ring.pop_into(out, fill_silence=True)


class BytearrayBuffer:
    """Append to a bytearray; copy the front out and delete it (CPython deletes from the
    front of a bytearray without moving the rest, so this is the good version)."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def push(self, chunk: bytes) -> None:
        self.buf += chunk

    def pop_into(self, out: npt.NDArray[np.int16]) -> int:
        n_bytes = min(out.nbytes, len(self.buf))
        out.view(np.uint8)[:n_bytes] = np.frombuffer(self.buf, dtype=np.uint8, count=n_bytes)
        del self.buf[:n_bytes]
        n = n_bytes // 2
        out[n:] = 0
        return n


class DequeBuffer:
    """A deque of numpy chunks plus a read offset into the first one."""

    def __init__(self) -> None:
        self.chunks: collections.deque[npt.NDArray[np.int16]] = collections.deque()
        self.offset = 0

    def push(self, chunk: bytes) -> None:
        self.chunks.append(np.frombuffer(chunk, dtype=np.int16))

    def pop_into(self, out: npt.NDArray[np.int16]) -> int:
        filled = 0
        while filled < len(out) and self.chunks:
            head = self.chunks[0]
            take = min(len(head) - self.offset, len(out) - filled)
            out[filled : filled + take] = head[self.offset : self.offset + take]
            filled += take
            self.offset += take
            if self.offset == len(head):
                self.chunks.popleft()
                self.offset = 0
        out[filled:] = 0
        return filled


BUFFERS: dict[str, type[JitterBuffer]] = {
    "voxwire-PcmRing": RingBuffer,
    "python-bytearray": BytearrayBuffer,
    "python-deque": DequeBuffer,
}


def signal(n: int, seed: int = 0) -> npt.NDArray[np.int16]:
    return np.random.default_rng(seed).integers(-32768, 32768, size=n).astype(np.int16)


def primed(kind: type[JitterBuffer]) -> JitterBuffer:
    """A buffer holding 200 ms, as in steady playback."""
    buf = kind()
    backlog = signal(BACKLOG_200MS, seed=1)
    for i in range(0, BACKLOG_200MS, CHUNK_20MS):
        buf.push(backlog[i : i + CHUNK_20MS].tobytes())
    return buf


@pytest.mark.parametrize("name", list(BUFFERS))
def test_buffers_deliver_the_same_samples(name: str) -> None:
    buf = BUFFERS[name]()
    x = signal(CHUNK_20MS * 20)
    out = np.empty(BUFFER_10MS, dtype=np.int16)
    got = []
    for i in range(0, len(x), CHUNK_20MS):
        buf.push(x[i : i + CHUNK_20MS].tobytes())
        for _ in range(2):
            assert buf.pop_into(out) == BUFFER_10MS
            got.append(out.copy())
    np.testing.assert_array_equal(np.concatenate(got), x)
    assert buf.pop_into(out) == 0
    assert not out.any(), "an empty buffer gives silence"


@pytest.mark.benchmark(group="20 ms in, 2 x 10 ms out, 200 ms buffered (24 kHz)")
@pytest.mark.parametrize("name", list(BUFFERS))
def test_tick(benchmark, name: str) -> None:  # type: ignore[no-untyped-def]
    buf = primed(BUFFERS[name])
    chunk = signal(CHUNK_20MS, seed=2).tobytes()
    out = np.empty(BUFFER_10MS, dtype=np.int16)

    def tick() -> None:
        buf.push(chunk)
        buf.pop_into(out)
        buf.pop_into(out)

    benchmark(tick)


@pytest.mark.benchmark(group="20 ms in, 2 x 10 ms out, 200 ms buffered (24 kHz)")
def test_tick_ring_pop_new_arrays(benchmark) -> None:  # type: ignore[no-untyped-def]
    """PcmRing.pop(n), which allocates a new array per call, for comparison with pop_into."""
    ring = PcmRing(RATE_HZ)
    ring.push(signal(BACKLOG_200MS, seed=1))
    chunk = signal(CHUNK_20MS, seed=2).tobytes()

    def tick() -> None:
        ring.push(chunk)
        ring.pop(BUFFER_10MS)
        ring.pop(BUFFER_10MS)

    benchmark(tick)


@pytest.mark.benchmark(group="20 ms in, 2 x 10 ms out, 200 ms buffered (24 kHz)")
def test_tick_clock(benchmark) -> None:  # type: ignore[no-untyped-def]
    """The same tick through PlaybackClock.push, which also tags the samples with their item."""
    ring = PcmRing(RATE_HZ)
    clock = PlaybackClock(ring, RATE_HZ)
    clock.push("item_backlog", 0, signal(BACKLOG_200MS, seed=1))
    chunk = signal(CHUNK_20MS, seed=2).tobytes()
    out = np.empty(BUFFER_10MS, dtype=np.int16)

    def tick() -> None:
        clock.push("item_backlog", 0, chunk)
        ring.pop_into(out, fill_silence=True)
        ring.pop_into(out, fill_silence=True)

    benchmark(tick)
