"""PlaybackClock from Python: what interrupt() reports, at 24 kHz, 8 kHz (G.711) and with a
48 kHz device, and that it is exact while a real device-like thread pops."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from voxwire.audio import ItemPlayback, PcmRing, PlaybackClock
from voxwire.exceptions import InvalidState


def tone(n: int, value: int = 1000) -> np.ndarray:
    return np.full(n, value, dtype=np.int16)


def test_truncate_the_playing_item_and_delete_the_unstarted_one() -> None:
    ring = PcmRing(48000)
    clock = PlaybackClock(ring, ring_rate_hz=24000)
    assert clock.push("item_a", 0, tone(2400)) == 2400  # 100 ms
    assert clock.push("item_b", 0, tone(2400).tobytes()) == 2400
    ring.pop(1000)

    assert clock.interrupt() == [
        ItemPlayback("item_a", 0, 24000, 1000, 41, 2400, True),
        ItemPlayback("item_b", 0, 24000, 0, 0, 2400, False),
    ]
    # What was not played is gone; what the server may still send belongs to a new response.
    assert (ring.readable_samples, clock.buffered_samples) == (0, 0)
    assert ring.dropped_samples == 3800
    assert clock.items() == []


def test_g711_call_at_8khz() -> None:
    ring = PcmRing(8000)
    clock = PlaybackClock(ring, 8000)
    clock.push("call_item", 0, tone(1600))
    out = np.zeros(160, dtype=np.int16)  # 20 ms device buffers
    for _ in range(7):
        ring.pop_into(out, fill_silence=True)
    played = clock.played("call_item", 0)
    assert played is not None
    assert (played.played_samples, played.played_ms, played.rate_hz) == (1120, 140, 8000)


def test_items_at_24khz_on_a_48khz_device() -> None:
    ring = PcmRing(96000)
    clock = PlaybackClock(ring, 48000)
    # The session resampled 24 kHz item audio to the device rate before queueing it.
    clock.push("item_a", 0, tone(9600), item_rate_hz=24000)
    ring.pop(4847)  # 2423.5 item samples: 100.96 ms
    [report] = clock.interrupt()
    assert (report.played_samples, report.played_ms, report.queued_samples) == (2423, 100, 4800)
    assert report.rate_hz == 24000


def test_zero_length_items_and_back_to_back_items() -> None:
    ring = PcmRing(1000)
    clock = PlaybackClock(ring, 24000)
    clock.push("a", 0, tone(100))
    clock.push("b", 0, b"")  # an item whose audio has not arrived yet
    clock.push("c", 1, tone(100))
    ring.pop(150)
    summary = [
        (r.item_id, r.played_samples, r.queued_samples, r.started) for r in clock.interrupt()
    ]
    # "a" finished before "b" and "c"; the empty "b" was passed (nothing of it left to cut).
    assert summary == [("c", 50, 100, True)]

    clock.push("d", 0, tone(10))
    clock.push("e", 0, b"")
    summary = [
        (r.item_id, r.played_samples, r.queued_samples, r.started) for r in clock.interrupt()
    ]
    assert summary == [("d", 0, 10, False), ("e", 0, 0, False)]


def test_played_drop_finished_and_item_playback_values() -> None:
    ring = PcmRing(100)
    clock = PlaybackClock(ring, 24000)
    clock.push("a", 0, tone(30))
    clock.push("a", 0, tone(30))  # the same item keeps growing
    clock.push("b", 0, tone(10))
    ring.pop(70)
    a = clock.played("a", 0)
    assert a == ItemPlayback("a", 0, 24000, 60, 2, 60, True)
    assert hash(a) == hash(ItemPlayback("a", 0, 24000, 60, 2, 60, True))
    assert repr(a) == (
        "ItemPlayback(item_id='a', content_index=0, rate_hz=24000, played_samples=60, played_ms=2, "
        "queued_samples=60, started=True)"
    )
    assert clock.played("a", 1) is None
    assert clock.played("nope", 0) is None
    assert clock.drop_finished() == 1
    assert clock.played("a", 0) is None
    assert [r.item_id for r in clock.items()] == ["b"]


def test_a_full_ring_accepts_a_prefix_and_the_rest_can_follow() -> None:
    ring = PcmRing(64)
    clock = PlaybackClock(ring, 24000)
    assert clock.push("a", 0, tone(100)) == 64
    assert ring.overrun_samples == 36
    ring.pop(64)
    assert clock.push("a", 0, tone(36)) == 36
    a = clock.played("a", 0)
    assert a is not None
    assert (a.played_samples, a.queued_samples) == (64, 100)


def test_space_freed_by_an_interrupt_is_writable_at_once_when_the_device_is_idle() -> None:
    ring = PcmRing(100)
    clock = PlaybackClock(ring, 24000)
    clock.push("a", 0, tone(100))
    ring.pop(10)
    clock.interrupt()
    assert ring.writable_samples == 100
    assert clock.push("b", 0, tone(100)) == 100


def test_construction_and_argument_errors() -> None:
    ring = PcmRing(16)
    with pytest.raises(
        ValueError, match=r"ring_rate_hz=0 is not a usable sample rate: expected 1..=768000"
    ):
        PlaybackClock(ring, 0)
    with pytest.raises(TypeError, match="ring_rate_hz must be an int"):
        PlaybackClock(ring, "24000")  # type: ignore[arg-type]
    # A failed construction leaves the ring's producer side where it was.
    assert ring.push(tone(2)) == 2
    clock = PlaybackClock(ring, 24000)
    with pytest.raises(InvalidState, match="already feeds a PlaybackClock"):
        PlaybackClock(ring, 24000)
    assert clock.ring is ring

    with pytest.raises(ValueError, match="item_rate_hz=-8000 is not a usable sample rate"):
        clock.push("a", 0, tone(4), item_rate_hz=-8000)
    with pytest.raises(
        ValueError, match=r"content_index=-1 is not allowed: expected 0..=4294967295"
    ):
        clock.push("a", -1, tone(4))
    with pytest.raises(ValueError, match=r"content_index=4294967296 is not allowed"):
        clock.played("a", 2**32)
    with pytest.raises(ValueError, match="even number of bytes"):
        clock.push("a", 0, b"\x00")
    assert clock.items() == [], "refused calls record nothing"
    with pytest.raises(ValueError, match="played_samples=-1 is not allowed: expected >= 0"):
        ItemPlayback("a", 0, 24000, -1, 0, 0, False)
    with pytest.raises(ValueError, match="rate_hz=0 is not a usable sample rate"):
        ItemPlayback("a", 0, 0, 0, 0, 0, False)


def test_interrupt_is_exact_while_a_device_thread_pops() -> None:
    """A device thread pops 10 ms buffers while this thread queues items in 20 ms chunks and
    interrupts at random moments. Each sample carries its item's number, so the device thread
    knows exactly what it played; every report must agree with it to the sample."""
    n_items = 300
    ring = PcmRing(2400)
    clock = PlaybackClock(ring, 24000)
    played = np.zeros(n_items + 1, dtype=np.int64)
    stop = threading.Event()
    errors: list[BaseException] = []

    def device() -> None:
        try:
            out = np.empty(240, dtype=np.int16)
            while True:
                finished = stop.is_set()
                n = ring.pop_into(out)
                played[:] += np.bincount(out[:n], minlength=n_items + 1)
                if n == 0 and finished:
                    return
        except BaseException as e:
            errors.append(e)

    thread = threading.Thread(target=device)
    thread.start()
    rng = np.random.default_rng(5)
    queued = np.zeros(n_items + 1, dtype=np.int64)
    reports: dict[str, ItemPlayback] = {}
    try:
        for item in range(1, n_items + 1):
            chunk = np.full(480, item, dtype=np.int16)
            for _ in range(int(rng.integers(1, 6))):
                sent = 0
                while sent < len(chunk):
                    if errors:  # the device thread died: do not wait for it forever
                        raise errors[0]
                    n = clock.push(f"item_{item}", 0, chunk[sent:])
                    sent += n
                    queued[item] += n
            if rng.integers(0, 3) == 0:
                for r in clock.interrupt():
                    reports[r.item_id] = r
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert errors == []

    assert len(reports) > 50
    cut_mid_play = 0
    for item in range(1, n_items + 1):
        r = reports.get(f"item_{item}")
        if r is None:
            assert played[item] == queued[item], f"item {item} was never cut: all of it plays"
            continue
        assert r.played_samples == played[item], f"item {item}"
        assert r.queued_samples == queued[item]
        assert r.started == (played[item] > 0)
        cut_mid_play += 0 < r.played_samples < r.queued_samples
    assert cut_mid_play > 5, "some items must have been cut while playing"
