"""Echo cancellation on simulated speakerphone rooms: voxwire's canceller side by side with
WebRTC's AEC3 as LiveKit ships it (``livekit.rtc.AudioProcessingModule``), on the same signals.

Run:  OPENBLAS_NUM_THREADS=1 python benches/aec_rooms.py [--turns 50] [--peers BINARY]

``--peers``: also the ``aec3`` and ``sonora-aec3`` crates, built from benches/aec_peers (their
time is the CPU time of the binary's process; sonora-aec3 runs at 16 kHz, resampled outside the
timing).

Scenes (tests/audio/echo_rooms.py): espeak-ng speech for the agent and the user, exponential-
decay room impulse responses (RT60 0.3 / 0.45 / 0.6 s), the echo 6 or 12 dB louder than the user
at the microphone, noise at -70 dBFS, the user talking over the agent from 7 s (double-talk).
Figures per canceller:

* ERLE 0.5-1 s: echo reduction in the second half of the first second of agent audio
  (convergence), and ERLE >1 s: from 1 s until the user speaks (after convergence);
* DT SI-SDR: scale-invariant SDR of the user's speech in the output during double-talk (the
  microphone itself scores about -5 dB at +6 dB echo);
* CPU: seconds of one core per minute of audio (process time, 10 ms blocks, single thread).

Then, with voxwire only: the local barge-in detector (gate -50 dBFS, 120 ms of speech) on the
cleaned microphone over ``--turns`` agent turns in random rooms (false barge-ins from echo),
real barge-ins (user line at a random time: detected, and within 300 ms of its onset) and
coughs; and the CPU of the whole microphone path at 48 kHz devices (EchoCancelledInput:
48 -> 24 kHz, canceller at 24 kHz).
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import numpy.typing as npt
from tests.audio.echo_rooms import RATE_HZ, Scene, scene

from voxwire.audio import (
    BargeInDetector,
    Decision,
    EchoCancelledInput,
    EchoCanceller,
    FalseInterruptionFilter,
    MemoryInput,
    MemoryOutput,
    Resampler,
)
from voxwire.audio.room import erle_db, si_sdr_db

BLOCK = RATE_HZ // 100
Canceller = Callable[[Scene], tuple[npt.NDArray[np.float64], float]]


def voxwire_aec(s: Scene, delay_search: bool = False) -> tuple[npt.NDArray[np.float64], float]:
    aec = EchoCanceller(RATE_HZ, delay_search=delay_search)
    out = np.zeros(len(s.mic), dtype=np.int16)
    t0 = time.process_time()
    for i in range(0, len(s.mic), BLOCK):
        out[i : i + BLOCK] = aec.process(s.mic[i : i + BLOCK], s.reference[i : i + BLOCK])
    cpu = time.process_time() - t0
    lag = aec.latency_samples
    return np.concatenate([out[lag:], np.zeros(lag)]).astype(np.float64), cpu


def voxwire_search(s: Scene) -> tuple[npt.NDArray[np.float64], float]:
    """The same with the delay search on (the scenes need none: what it costs, and that it does
    no harm when the clocks are right)."""
    return voxwire_aec(s, delay_search=True)


def livekit_aec(s: Scene) -> tuple[npt.NDArray[np.float64], float]:
    out, cpu = _livekit_run(s.mic, s.reference)
    lag = _livekit_lag()
    return np.concatenate([out[lag:], np.zeros(lag)]), cpu


@functools.cache
def _livekit_lag() -> int:
    """The APM's processing delay at 24 kHz (it resamples inside): measured on a near-end-only
    signal with a silent reference, then removed so the figures compare like with like."""
    user = scene(0.3).user
    pcm = np.clip(np.round(user), -32768, 32767).astype(np.int16)
    out, _ = _livekit_run(pcm, np.zeros_like(pcm))
    c = np.correlate(out[: 4 * RATE_HZ + 2000], user[: 4 * RATE_HZ], "valid")
    return int(np.argmax(np.abs(c)))


def _livekit_run(
    mic: npt.NDArray[np.int16], reference: npt.NDArray[np.int16]
) -> tuple[npt.NDArray[np.float64], float]:
    from livekit import rtc

    apm = rtc.AudioProcessingModule(echo_cancellation=True, high_pass_filter=True)
    apm.set_stream_delay_ms(0)
    out = np.zeros(len(mic), dtype=np.int16)
    t0 = time.process_time()
    for i in range(0, len(mic) - BLOCK + 1, BLOCK):
        far = rtc.AudioFrame(reference[i : i + BLOCK].tobytes(), RATE_HZ, 1, BLOCK)
        apm.process_reverse_stream(far)
        near = rtc.AudioFrame(mic[i : i + BLOCK].tobytes(), RATE_HZ, 1, BLOCK)
        apm.process_stream(near)
        out[i : i + BLOCK] = np.frombuffer(near.data, dtype=np.int16)
    return out.astype(np.float64), time.process_time() - t0


def peer_binary(binary: str, peer: str, rate_hz: int = RATE_HZ) -> Canceller:
    """A peer canceller run by benches/aec_peers (``peer``: ``aec3`` or ``sonora``); its time is
    the CPU time of the binary's process (reading and writing two short files included). At a
    ``rate_hz`` other than the scenes' the signals are resampled on the way in and out
    (voxwire's resampler, outside the timing), and the probe that measures the peer's delay
    goes through the same path."""
    down = functools.partial(_resample, RATE_HZ, rate_hz)
    up = functools.partial(_resample, rate_hz, RATE_HZ)

    def run_files(mic: npt.NDArray[np.int16], ref: npt.NDArray[np.int16]) -> tuple[Any, float]:
        with tempfile.TemporaryDirectory() as tmp:
            paths = [os.path.join(tmp, f) for f in ("ref.raw", "mic.raw", "out.raw")]
            down(ref).astype("<i2").tofile(paths[0])
            down(mic).astype("<i2").tofile(paths[1])
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(
                [binary, peer, *paths, str(rate_hz)], check=True, capture_output=True, text=True
            )
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            out = up(np.fromfile(paths[2], dtype="<i2")).astype(np.float64)
        out = np.concatenate([out, np.zeros(max(0, len(mic) - len(out)))])[: len(mic)]
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        return out, cpu

    user = scene(0.3).user
    pcm = np.clip(np.round(user), -32768, 32767).astype(np.int16)
    probe, _ = run_files(pcm, np.zeros_like(pcm))
    c = np.correlate(probe[: 4 * RATE_HZ + 2000], user[: 4 * RATE_HZ], "valid")
    lag = int(np.argmax(np.abs(c)))

    def run(s: Scene) -> tuple[npt.NDArray[np.float64], float]:
        out, seconds = run_files(s.mic, s.reference)
        return np.concatenate([out[lag:], np.zeros(lag)]), seconds

    return run


def _resample(from_hz: int, to_hz: int, pcm: npt.NDArray[np.int16]) -> npt.NDArray[np.int16]:
    if from_hz == to_hz:
        return pcm
    r = Resampler(from_hz, to_hz)
    out: npt.NDArray[np.int16] = np.concatenate([r.process(pcm), r.flush()])
    return out


def figures(s: Scene, out: npt.NDArray[np.float64]) -> tuple[float, float, float]:
    half, second, talk = RATE_HZ // 2, RATE_HZ, slice(s.user_start, s.user_start + s.user_len)
    return (
        erle_db(s.echo[half:second], out[half:second]),
        erle_db(s.echo[second : s.user_start], out[second : s.user_start]),
        si_sdr_db(s.user[talk], out[talk]),
    )


def compare(cancellers: dict[str, Canceller], rows: list[str]) -> None:
    rows.append(
        "| RT60 s | echo over user dB | canceller | ERLE 0.5-1 s | ERLE >1 s | DT SI-SDR dB "
        "| CPU s/min |"
    )
    rows.append("|---|---|---|---|---|---|---|")
    totals: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in cancellers}
    for rt60 in (0.3, 0.45, 0.6):
        for echo_db in (6.0, 12.0):
            s = scene(rt60, echo_over_user_db=echo_db)
            minutes = len(s.mic) / RATE_HZ / 60
            for name, run in cancellers.items():
                out, cpu = run(s)
                conv, after, sdr = figures(s, out)
                totals[name].append((conv, after, sdr, cpu / minutes))
                rows.append(
                    f"| {rt60} | +{echo_db:.0f} | {name} | {conv:.1f} | {after:.1f} | {sdr:.1f} "
                    f"| {cpu / minutes:.2f} |"
                )
    for name, vals in totals.items():
        med = [statistics.median(v[i] for v in vals) for i in range(4)]
        rows.append(
            f"| median | | **{name}** | {med[0]:.1f} | {med[1]:.1f} | {med[2]:.1f} | {med[3]:.2f} |"
        )


def detector() -> BargeInDetector:
    d = BargeInDetector(RATE_HZ, echo_gate_dbfs=-50.0, echo_min_speech_ms=120)
    d.agent_speaking = True
    return d


def decisions(pcm: npt.NDArray[np.int16]) -> list[Decision]:
    """Local onset -> pause -> FalseInterruptionFilter, with the server VAD stood in for by
    webrtcvad as the local server runs it at threshold 0.75 (aggressiveness 3; 60 ms to start,
    500 ms of silence to stop) on the same cleaned microphone; no transcripts."""
    local, server = (
        detector(),
        BargeInDetector(RATE_HZ, aggressiveness=3, min_speech_ms=60, hangover_ms=500),
    )
    recovery = FalseInterruptionFilter(
        wait_for_transcript=False, min_turn_ms=600, vad_silence_ms=500
    )
    block = RATE_HZ // 50
    for i in range(0, len(pcm) - block + 1, block):
        now_ms = (i + block) * 1000 / RATE_HZ
        if local.process(pcm[i : i + block]):
            recovery.onset(now_ms)
        was = server.in_speech
        server.process(pcm[i : i + block])
        if recovery.pending and server.in_speech:
            recovery.speech_started(now_ms)
        elif recovery.pending and was:
            recovery.speech_stopped(now_ms)
        else:
            recovery.poll(now_ms)
    return recovery.decisions


def cleaned(s: Scene) -> npt.NDArray[np.int16]:
    return np.clip(voxwire_aec(s)[0], -32768, 32767).astype(np.int16)


def barge_ins(turns: int, rows: list[str]) -> None:
    rng = np.random.default_rng(7)
    false_clean = false_raw = 0
    for k in range(turns):
        s = scene(float(rng.uniform(0.3, 0.6)), user_at_s=None, seed=100 + k)
        for pcm, is_raw in ((cleaned(s), False), (s.mic, True)):
            d = detector()
            d.process(pcm)
            if is_raw:
                false_raw += d.triggers
            else:
                false_clean += d.triggers
    detected = in_time = coughs = recovered = real_cut = 0
    n_real = max(turns // 2, 1)
    for k in range(n_real):
        at = float(rng.uniform(2.0, 8.0))
        s = scene(float(rng.uniform(0.3, 0.6)), user_at_s=round(at, 2), seed=200 + k)
        clean = cleaned(s)
        d = detector()
        d.process(clean)
        real_cut += any(x.action == "cut" for x in decisions(clean))
        onset_ms = (
            s.user_start + int(np.flatnonzero(np.abs(s.user[s.user_start :]) > 300)[0])
        ) / 24
        if d.triggers and d.last_start_ms is not None:
            detected += 1
            heard_ms = d.last_start_ms + d.echo_min_speech_ms
            in_time += heard_ms - onset_ms <= 300
        c = scene(
            float(rng.uniform(0.3, 0.6)), user_at_s=round(at, 2), use_cough=True, seed=300 + k
        )
        clean = cleaned(c)
        d = detector()
        d.process(clean)
        coughs += d.triggers > 0
        made = decisions(clean)
        recovered += bool(made) and all(x.action == "resume" for x in made)
    rows.append(
        f"- false barge-ins from echo in {turns} agent turns at +6 dB: **{false_clean}** "
        f"with the canceller ({false_raw} on the raw microphone, same detector)"
    )
    rows.append(
        f"- real barge-ins detected: **{detected}/{n_real}**, within 300 ms of the "
        f"user's onset: **{in_time}/{n_real}**"
    )
    rows.append(
        f"- coughs during agent speech that trigger the local detector: {coughs}/{n_real}; "
        f"paused, then resumed by FalseInterruptionFilter (server VAD stood in for by "
        f"webrtcvad at threshold 0.75, no transcripts): **{recovered}/{coughs}**; real "
        f"barge-ins it cuts: **{real_cut}/{n_real}**"
    )


def mic_path_48k(rows: list[str]) -> None:
    s = scene(0.45, user_at_s=None)
    minutes = len(s.mic) / RATE_HZ / 60
    speaker = MemoryOutput(48_000, period_ms=10.0, latency_ms=20.0, prebuffer_ms=0.0)
    mic = EchoCancelledInput(
        MemoryInput(np.zeros(1, dtype=np.int16), 48_000), speaker.output, now=speaker.now
    )
    speaker.output.set_tap(mic.reference)
    speaker.output.push("item", 0, s.reference.tobytes())
    speaker.output.end("item", 0)
    mic48 = np.repeat(s.mic, 2)  # a 48 kHz capture (content does not change the cost)
    tap = path = 0.0
    for i in range(0, len(mic48) - 480 + 1, 480):
        t0 = time.process_time()
        speaker.advance(1)
        t1 = time.process_time()
        mic.process(mic48[i : i + 480])
        path += time.process_time() - t1
        tap += t1 - t0
    aec48 = EchoCanceller(48_000)
    t0 = time.process_time()
    for i in range(0, len(mic48) - 480 + 1, 480):
        aec48.process(mic48[i : i + 480], mic48[i : i + 480])
    direct48 = time.process_time() - t0
    rows.append(
        f"- microphone path at 48 kHz devices (EchoCancelledInput: mix, 48->24 kHz, "
        f"reference read, canceller at 24 kHz): **{path / minutes:.2f} s CPU per minute**; "
        f"the speaker side (pull + tap + 48->24 kHz reference resampling): "
        f"{tap / minutes:.2f} s per minute"
    )
    rows.append(
        f"- the canceller run at 48 kHz instead (EchoCanceller(48000), 10 ms blocks): "
        f"{direct48 / minutes:.2f} s CPU per minute"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument(
        "--peers",
        help="the aec-peers binary (cargo build --release --manifest-path "
        "benches/aec_peers/Cargo.toml) to add the aec3 crate",
    )
    args = parser.parse_args()
    cancellers: dict[str, Canceller] = {
        "voxwire": voxwire_aec,
        "voxwire, delay_search=True": voxwire_search,
    }
    try:
        import livekit.rtc  # noqa: F401

        cancellers["livekit APM (WebRTC AEC3)"] = livekit_aec
    except ImportError:
        print("livekit is not installed: comparing voxwire alone (pip install livekit)")
    if args.peers:
        cancellers["aec3 crate 0.4 (Rust AEC3 port)"] = peer_binary(args.peers, "aec3")
        cancellers["sonora-aec3 0.2 (Rust AEC3 port, 16 kHz)"] = peer_binary(
            args.peers, "sonora", 16_000
        )
    rows: list[str] = []
    compare(cancellers, rows)
    rows.append("")
    barge_ins(args.turns, rows)
    mic_path_48k(rows)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
