"""The resampler's Python API: streaming == one-shot, input types, errors, flush, reset."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.audio.signals import RATES_HZ
from voxwire.audio import Resampler, to_mono

RNG = np.random.default_rng(1234)
SIGNAL = (RNG.standard_normal(20000) * 6000).clip(-32768, 32767).astype(np.int16)


def one_shot(in_rate_hz: int, out_rate_hz: int, quality: str, x: np.ndarray) -> np.ndarray:
    r = Resampler(in_rate_hz, out_rate_hz, quality)
    return np.concatenate([r.process(x), r.flush()])


@settings(max_examples=60, deadline=None)
@given(
    in_rate_hz=st.sampled_from(RATES_HZ),
    out_rate_hz=st.sampled_from(RATES_HZ),
    quality=st.sampled_from(["fast", "hq", "vhq"]),
    cuts=st.lists(st.integers(min_value=0, max_value=len(SIGNAL)), max_size=12),
)
def test_chunked_output_is_bit_identical_to_one_call(
    in_rate_hz: int, out_rate_hz: int, quality: str, cuts: list[int]
) -> None:
    expected = one_shot(in_rate_hz, out_rate_hz, quality, SIGNAL)
    r = Resampler(in_rate_hz, out_rate_hz, quality)
    bounds = [0, *sorted(cuts), len(SIGNAL)]
    parts = [r.process(SIGNAL[a:b]) for a, b in itertools.pairwise(bounds)]
    got = np.concatenate([*parts, r.flush()])
    np.testing.assert_array_equal(got, expected)


def test_every_input_type_gives_the_same_output() -> None:
    x = SIGNAL[:4801]
    expected = Resampler(16000, 24000).process(x)
    raw = x.astype("<i2").tobytes()
    for pcm in (raw, bytearray(raw), memoryview(raw), x, x.copy(order="C")):
        np.testing.assert_array_equal(Resampler(16000, 24000).process(pcm), expected)
    # A strided view (one channel of interleaved stereo) is read correctly too.
    stereo = np.repeat(x, 2)
    np.testing.assert_array_equal(Resampler(16000, 24000).process(stereo[::2]), expected)


def test_output_len_is_exact_for_huge_counts_and_refuses_past_a_machine_word() -> None:
    # 2**60 * 160 / 147: a u64 product wrapped before (125488054923194229).
    assert Resampler(44100, 48000).output_len(2**60) == 1254880549231942287
    up = Resampler(8000, 48000)
    assert up.output_len((2**64 - 1) // 6) == (2**64 - 1) // 6 * 6
    with pytest.raises(OverflowError, match="pass the input in smaller chunks"):
        up.output_len((2**64 - 1) // 6 + 1)
    with pytest.raises(OverflowError):
        up.output_len(2**64)
    with pytest.raises(OverflowError):
        up.output_len(-1)
    assert Resampler(48000, 8000).output_len(2**64 - 1) == -(-(2**64 - 1) // 6)
    # After some input too: I inputs in all give ceil(I * 160 / 147) outputs, exactly.
    r = Resampler(44100, 48000)
    produced = len(r.process(SIGNAL[:441]))
    assert r.output_len(2**60) == -(-(441 + 2**60) * 160 // 147) - produced


def test_float_and_int16_paths_share_the_filter() -> None:
    r16 = Resampler(44100, 24000)
    rf = Resampler(44100, 24000)
    y16 = r16.process(SIGNAL)
    yf = rf.process_float(SIGNAL.astype(np.float32) / 32768)
    np.testing.assert_array_equal(y16, np.round(yf.astype(np.float64) * 32768).astype(np.int16))
    assert len(rf.flush_float()) == len(r16.flush())


def test_output_dtype_length_and_delay() -> None:
    r = Resampler(48000, 24000)
    assert r.output_len(960) == 480
    y = r.process(SIGNAL[:960])
    assert y.dtype == np.int16
    assert y.shape == (480,)
    assert r.output_delay() > 0
    assert (r.in_rate_hz, r.out_rate_hz, r.quality) == (48000, 24000, "hq")
    assert repr(r) == 'Resampler(in_rate_hz=48000, out_rate_hz=24000, quality="hq")'


def test_flush_drains_the_filter_and_starts_a_new_stream() -> None:
    r = Resampler(8000, 24000)
    impulse = np.zeros(80, np.int16)
    impulse[0] = 20000
    head = r.process(impulse)
    tail = r.flush()
    out = np.concatenate([head, tail])
    # Total = ceil(inputs * L/M + delay): every output whose centre lies in the signal.
    assert len(out) == int(np.ceil(80 * 3 + r.output_delay()))
    # The impulse response peaks at the delay.
    assert abs(int(np.argmax(out)) - r.output_delay()) <= 1
    # After flush the stream starts over: same input, same output.
    np.testing.assert_array_equal(r.process(impulse), head)


def test_reset_forgets_history() -> None:
    r = Resampler(24000, 16000)
    first = r.process(SIGNAL[:999])
    r.process(SIGNAL[1000:3000])
    r.reset()
    np.testing.assert_array_equal(r.process(SIGNAL[:999]), first)


def test_empty_input() -> None:
    r = Resampler(24000, 48000)
    assert len(r.process(b"")) == 0
    assert len(r.flush()) == 0


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 24000), "in_rate_hz=0"),
        ((-8000, 24000), "in_rate_hz=-8000"),
        ((24000, 10**7), "out_rate_hz=10000000"),
        ((7919, 24001), "filter phases"),
        ((24000, 16000, "best"), 'quality="best"'),
    ],
)
def test_bad_parameters_fail_at_construction(args: tuple[object, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Resampler(*args)  # type: ignore[arg-type]


def test_bad_audio_is_refused_with_what_to_do() -> None:
    r = Resampler(24000, 16000)
    with pytest.raises(ValueError, match=r"even number of bytes.*got 3"):
        r.process(b"\x00\x01\x02")
    with pytest.raises(TypeError, match=r"dtype float32.*astype"):
        r.process(np.zeros(10, np.float32))
    with pytest.raises(ValueError, match=r"1-D mono.*to_mono"):
        r.process(np.zeros((10, 2), np.int16))
    with pytest.raises(TypeError, match="got str"):
        r.process("audio")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="float32"):
        r.process_float(np.zeros(4, np.int16))  # type: ignore[arg-type]
    # Nothing was consumed by the failed calls.
    fresh = Resampler(24000, 16000)
    np.testing.assert_array_equal(r.process(SIGNAL[:300]), fresh.process(SIGNAL[:300]))


def test_to_mono() -> None:
    stereo = np.array([100, 300, -5, -6, 32767, 32767], np.int16)
    np.testing.assert_array_equal(to_mono(stereo, 2), [200, -6, 32767])
    np.testing.assert_array_equal(to_mono(stereo.tobytes(), 3), [132, 21843])
    with pytest.raises(ValueError, match="channels=0"):
        to_mono(stereo, 0)
    with pytest.raises(ValueError, match="whole number of 4-channel frames"):
        to_mono(stereo, 4)


def test_resamplers_run_in_parallel_threads() -> None:
    """Independent resamplers in threads give the same output as alone (no shared state)."""
    expected = one_shot(44100, 24000, "hq", SIGNAL)
    results: list[np.ndarray] = []

    def work() -> None:
        r = Resampler(44100, 24000)
        parts = [r.process(SIGNAL[i : i + 441]) for i in range(0, len(SIGNAL), 441)]
        results.append(np.concatenate([*parts, r.flush()]))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got in results:
        np.testing.assert_array_equal(got, expected)


KERNEL_CHECK = """
import sys
import numpy as np
from voxwire.audio import Resampler, resampler_kernel
x = np.frombuffer(sys.stdin.buffer.read(), dtype=np.int16)
r = Resampler(24000, 48000)
y = np.concatenate([r.process(x), r.flush()])
sys.stdout.buffer.write(resampler_kernel().encode() + b"\\n" + y.tobytes())
"""


def run_with_kernel(kernel: str | None) -> tuple[str, np.ndarray]:
    env = {k: v for k, v in os.environ.items() if k != "VOXWIRE_RESAMPLER_KERNEL"}
    if kernel is not None:
        env["VOXWIRE_RESAMPLER_KERNEL"] = kernel
    p = subprocess.run(
        [sys.executable, "-c", KERNEL_CHECK],
        input=SIGNAL.tobytes(),
        capture_output=True,
        env=env,
        check=True,
        timeout=60,
    )
    name, _, pcm = p.stdout.partition(b"\n")
    return name.decode(), np.frombuffer(pcm, dtype=np.int16)


def test_kernel_override_picks_portable_and_it_stays_within_one_lsb() -> None:
    """VOXWIRE_RESAMPLER_KERNEL (for benchmarks) picks a kernel the CPU runs; the portable one
    (no FMA) is within 1 LSB of the fused kernel the CPU selects. An unknown name is ignored."""
    best, y_best = run_with_kernel(None)
    portable, y_portable = run_with_kernel("portable")
    assert portable == "portable"
    assert len(y_best) == len(y_portable) > 2 * len(SIGNAL)
    assert np.abs(y_best.astype(np.int32) - y_portable).max() <= 1
    assert run_with_kernel("no-such-kernel")[0] == best
