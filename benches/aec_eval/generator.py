"""Seeded speakerphone scenes in rooms, devices and voices nobody tuned on.

One seed draws one scene (:func:`generate`): a room, a device (loudspeaker, microphone,
latency, clock), an agent turn in one voice and, in most scenes, a user talking over it in
another. Nothing here knows about any canceller.

* **Room**: a shoebox 3-10 x 2.5-8 x 2.4-3.5 m, a loudspeaker and a microphone 5-30 cm apart;
  the impulse response is hybrid, as room simulators commonly make it: the image-source method
  (pyroomacoustics, reflections up to order 12, Sabine's absorption for an RT60 drawn from
  0.2-1.0 s) for the first 40 ms, then a diffuse tail (Gaussian noise decaying at that RT60, as
  loud as the image sources around the junction; high orders of the image-source method are
  slow and their decay misses Sabine's by up to half). The direct sound is then scaled to a
  direct-to-reverberant ratio drawn from -20..+6 dB (a directional or boxed speaker, a
  microphone facing away).
* **Loudspeaker**: 40 % linear, 30 % distorting at -16 dB, 30 % at -10 dB (the distortion's
  power below the signal's after the best linear fit), through soft clipping (tanh) or a
  polynomial (second and third order), drive found by bisection; half are small speakers
  (a second-order high-pass at 150-400 Hz and a 4-10 dB resonance at 500-1500 Hz).
* **Microphone**: the user at -42..-30 dBFS on active speech, the echo 0-12 dB louder, the
  whole capture at a gain of -6..+6 dB, white noise at -80..-60 dBFS, clipped to PCM16.
* **Clocks**: in half the scenes the output latency is misreported by up to +-50 ms (positive:
  the echo arrives later than reported), in half the microphone's clock drifts from the
  speaker's by up to +-100 ppm (band-limited interpolation of the echo).
* **Talkers**: espeak-ng's ten service voices at 0.9-1.15x speed, plus hibari's neural voice
  for the agent (the dev extra installs it; without it, its seeds speak with espeak-ng), each
  re-pitched by 0.88-1.12x; 2-3 agent sentences with pauses; the user at the start (0.2-1.5 s
  in), the middle, the end of the agent's turn, or not at all.

Renders are cached under benches/aec_eval/cache/ (git-ignored). ``SEEDS`` holds the disjoint
tune, held-out and test ranges.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import signal

from voxwire.audio import Resampler

RATE_HZ = 24_000
#: Reflection order of the image sources, and where (ms after the direct sound) the diffuse
#: tail takes over from them.
EARLY_ORDER = 12
JUNCTION_MS = 40
CACHE = Path(__file__).parent / "cache"
#: Seed ranges: canceller constants may be chosen on TUNE only; HELD_OUT is for reporting;
#: TEST is the slice tests/audio/test_echo_unseen.py runs (disjoint from both).
SEEDS = {"tune": range(0, 60), "held_out": range(10_000, 10_120), "test": range(90_000, 90_100)}
SPEAKERS = (("linear", None, 0.4), ("distort16", -16.0, 0.3), ("distort10", -10.0, 0.3))
AGENT_LINES = (
    "Thanks for calling. Your booking for two nights is confirmed.",
    "Breakfast is served every morning from seven until half past ten.",
    "I can also reserve a table at the restaurant for you this evening.",
    "The weather tomorrow looks sunny, with a high of twenty three degrees.",
    "Your parcel left the warehouse this morning and should arrive on Thursday.",
    "To reset your password, open the settings page and choose security.",
    "There are three flights to Lisbon tomorrow, the earliest leaves at six forty.",
    "I have moved your appointment to Monday at two in the afternoon.",
    "The total comes to forty eight euros, including delivery and taxes.",
    "Let me read that back to you: one large pizza and two lemonades.",
    "Our opening hours are nine to five on weekdays and ten to two on Saturdays.",
    "Is there anything else I can help you with today?",
)
USER_LINES = (
    "Stop.",
    "Wait, wait.",
    "No, hold on a second.",
    "Actually, could you move it to Friday instead?",
    "Sorry, what was that?",
    "I need to talk to somebody else, please.",
)
ESPEAK_VOICES = ("alloy", "ash", "ballad", "cedar", "coral", "echo", "marin", "sage", "shimmer")
ESPEAK_VOICES += ("verse",)


@dataclass
class Scene:
    """A capture: ``mic = gain * (echo + user) + noise`` (PCM16), ``played`` the agent's audio at
    the time the output reported it heard (a canceller is fed it ``lead`` samples early, see
    :meth:`reference`). ``echo`` and ``user`` are the components as captured (gain included)."""

    seed: int
    played: npt.NDArray[np.int16]
    mic: npt.NDArray[np.int16]
    echo: npt.NDArray[np.float64]
    user: npt.NDArray[np.float64]
    agent: list[tuple[int, int]]  # (start, end) samples of each agent sentence, as played
    user_span: tuple[int, int] | None  # (start, end) of the user's line in the capture
    meta: dict[str, Any] = field(default_factory=dict)

    def reference(self, lead_ms: float) -> npt.NDArray[np.int16]:
        """``played`` read ``lead_ms`` ahead (the clocks' position plus a canceller's margin)."""
        k = round(lead_ms * RATE_HZ / 1000)
        return np.concatenate([self.played[k:], np.zeros(k, dtype=np.int16)])

    @property
    def agent_span(self) -> tuple[int, int]:
        return self.agent[0][0], self.agent[-1][1]


def _render(text: str, voice: str, speed: float) -> npt.NDArray[np.float64]:
    key = f"{voice}-{speed:.2f}-{hashlib.sha1(text.encode()).hexdigest()[:12]}"
    path = CACHE / f"{key}.npy"
    if path.exists():
        cached: npt.NDArray[np.float64] = np.load(path)
        return cached
    if voice == "hibari":
        from voxwire.server.engines.tts import HibariEngine

        spoken: Any = HibariEngine.shared().synthesize(text, "alloy", speed)
        pcm, rate_hz = np.asarray(spoken.pcm, dtype=np.int16), spoken.rate_hz
    else:  # a fresh engine per line: espeak-ng's state would carry between lines (speak.py)
        from benches.aec_eval.speak import spoken as fresh

        pcm, rate_hz = fresh(text, voice, speed)
    if rate_hz != RATE_HZ:
        pcm = Resampler(rate_hz, RATE_HZ).process(pcm)
    out = pcm.astype(np.float64)
    CACHE.mkdir(exist_ok=True)
    np.save(path, out)
    return out


@cache
def _hibari_available() -> bool:
    try:
        import hibari  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return False
    return True


def voice_line(text: str, voice: str, speed: float, pitch: float) -> npt.NDArray[np.float64]:
    """``text`` spoken by ``voice``, re-pitched by ``pitch`` (read as if recorded at
    ``pitch`` times the rate: higher and faster)."""
    x = _render(text.replace("  ", " "), voice, round(speed, 2))
    src = round(RATE_HZ * pitch / 100) * 100
    if src == RATE_HZ:
        return x
    pcm = np.clip(np.round(x), -32768, 32767).astype(np.int16)
    return Resampler(src, RATE_HZ).process(pcm).astype(np.float64)


def _scale(x: npt.NDArray[np.float64], dbfs: float) -> npt.NDArray[np.float64]:
    """``x`` scaled so its active samples (above 1 % of its peak) sit at ``dbfs`` RMS."""
    active = np.abs(x) > 0.01 * np.max(np.abs(x))
    rms = math.sqrt(float(np.mean(x[active] ** 2)))
    out: npt.NDArray[np.float64] = x * (32768.0 * 10 ** (dbfs / 20) / rms)
    return out


def room_response(
    rng: np.random.Generator, rt60_s: float, drr_db: float
) -> npt.NDArray[np.float64]:
    """An image-source impulse response (see the module docs), unit energy."""
    import pyroomacoustics as pra  # type: ignore[import-untyped]

    dims = np.array([rng.uniform(3, 10), rng.uniform(2.5, 8), rng.uniform(2.4, 3.5)])
    absorption, _ = pra.inverse_sabine(rt60_s, dims)
    room = pra.ShoeBox(
        dims, fs=RATE_HZ, materials=pra.Material(min(absorption, 0.99)), max_order=EARLY_ORDER
    )
    spk = np.array([rng.uniform(0.5, d - 0.5) for d in dims])
    offset = rng.standard_normal(3)
    mic = spk + offset / np.linalg.norm(offset) * rng.uniform(0.05, 0.3)
    mic = np.clip(mic, 0.1, dims - 0.1)
    room.add_source(spk)
    room.add_microphone(mic)
    room.compute_rir()
    early = np.asarray(room.rir[0][0], dtype=np.float64)
    peak = int(np.argmax(np.abs(early)))
    h = np.zeros(peak + int(1.2 * rt60_s * RATE_HZ))
    h[: min(len(early), len(h))] = early[: len(h)]
    # Late reverberation: Gaussian noise decaying at the RT60, as loud at the junction as the
    # image sources around it, cross-faded over 10 ms from JUNCTION_MS after the direct sound.
    t = np.maximum(np.arange(len(h)) - peak, 0) / RATE_HZ
    tail = rng.standard_normal(len(h)) * np.exp(-3 * math.log(10) * t / rt60_s)
    around = (t >= 0.01) & (t < 0.05)
    density = float(np.mean(h[around] ** 2)) or 1e-3 * float(np.sum(h**2)) / RATE_HZ
    tail *= math.sqrt(density / float(np.mean(tail[around] ** 2)))
    j = JUNCTION_MS / 1000
    fade = np.clip((t - j) / 0.01, 0.0, 1.0)
    h = h * np.cos(0.5 * np.pi * fade) + tail * np.sin(0.5 * np.pi * fade)
    # Direct part: 1 ms either side of the direct arrival (the fractional-delay filter's main
    # lobe); the rest is reverberation.
    w = RATE_HZ // 1000
    direct = np.zeros(len(h), dtype=bool)
    direct[max(peak - w, 0) : peak + w] = True
    e_direct, e_rev = float(np.sum(h[direct] ** 2)), float(np.sum(h[~direct] ** 2))
    h[direct] *= math.sqrt(e_rev * 10 ** (drr_db / 10) / e_direct)
    out: npt.NDArray[np.float64] = h / math.sqrt(float(np.sum(h**2)))
    return out


def _rt60(h: npt.NDArray[np.float64]) -> float:
    """RT60 from Schroeder's backward integral, fitted from -5 to -25 dB (T20 x 3)."""
    edc = np.cumsum(h[::-1] ** 2)[::-1]
    db = 10 * np.log10(edc / edc[0] + 1e-30)
    i5, i25 = int(np.argmax(db <= -5)), int(np.argmax(db <= -25))
    if i25 <= i5:
        return 0.3
    slope = np.polyfit(np.arange(i5, i25) / RATE_HZ, db[i5:i25], 1)[0]
    return float(-60 / slope)


def distortion_db(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    """Power of ``y`` not explained by a scaled ``x``, below ``y``'s, in dB."""
    beta = float(np.dot(x, y) / np.dot(x, x))
    return 10 * math.log10(float(np.sum((y - beta * x) ** 2)) / float(np.sum(y**2)))


def _nonlinear(kind: str, x: npt.NDArray[np.float64], c: float, a2: float) -> Any:
    if kind == "tanh":
        return np.tanh(c * x) / c
    return x + c * (a2 * x**2 - (1 - a2) * x**3)


def loudspeaker(
    rng: np.random.Generator, x: npt.NDArray[np.float64], target_db: float | None, small: bool
) -> tuple[npt.NDArray[np.float64], dict[str, Any]]:
    """What the loudspeaker radiates for the played ``x`` (see the module docs)."""
    meta: dict[str, Any] = {"small": small}
    peak = float(np.max(np.abs(x)))
    y = x / peak
    if target_db is not None:
        kind = "tanh" if rng.random() < 0.5 else "poly"
        a2 = float(rng.uniform(0.2, 0.8))
        lo, hi = 1e-3, 60.0 if kind == "tanh" else 8.0
        for _ in range(40):
            mid = math.sqrt(lo * hi)
            if distortion_db(y, _nonlinear(kind, y, mid, a2)) < target_db:
                lo = mid
            else:
                hi = mid
        y = _nonlinear(kind, y, lo, a2)
        y = y - float(np.mean(y))
        meta.update(nonlinearity=kind, distortion_db=round(distortion_db(x, y), 1))
    if small:
        f_hp, f0 = rng.uniform(150, 400), rng.uniform(500, 1500)
        gain_db, q = rng.uniform(4, 10), rng.uniform(1, 3)
        y = signal.sosfilt(signal.butter(2, f_hp, "high", fs=RATE_HZ, output="sos"), y)
        y = signal.lfilter(*_peaking(f0, gain_db, q), y)
        meta.update(highpass_hz=round(f_hp), resonance_hz=round(f0), resonance_db=round(gain_db, 1))
    else:
        y = signal.sosfilt(signal.butter(2, 60, "high", fs=RATE_HZ, output="sos"), y)
    out: npt.NDArray[np.float64] = y * peak
    return out, meta


def _peaking(f0: float, gain_db: float, q: float) -> tuple[Any, Any]:
    """RBJ peaking equaliser coefficients (b, a)."""
    a, w = 10 ** (gain_db / 40), 2 * math.pi * f0 / RATE_HZ
    alpha = math.sin(w) / (2 * q)
    b = np.array([1 + alpha * a, -2 * math.cos(w), 1 - alpha * a])
    den = np.array([1 + alpha / a, -2 * math.cos(w), 1 - alpha / a])
    return b / den[0], den / den[0]


def drift(x: npt.NDArray[np.float64], ppm: float) -> npt.NDArray[np.float64]:
    """``x`` as a clock running ``ppm`` faster samples it (windowed-sinc interpolation)."""
    if ppm == 0:
        return x
    pos = np.arange(len(x)) * (1 + ppm * 1e-6)
    base = np.floor(pos).astype(np.int64)
    frac = pos - base
    out = np.zeros(len(x))
    padded = np.concatenate([np.zeros(16), x, np.zeros(17)])
    for k in range(-15, 17):
        u = k - frac
        taps = np.sinc(u) * (0.5 + 0.5 * np.cos(np.pi * u / 16))
        out += taps * padded[np.clip(base + k + 16, 0, len(padded) - 1)]
    return out


def _agent_turn(
    rng: np.random.Generator,
) -> tuple[npt.NDArray[np.float64], list[tuple[int, int]], dict[str, Any]]:
    # Drawn from all eleven whether or not hibari is installed, so every other seed's scene is
    # the same everywhere; without hibari its seeds speak with espeak-ng's "alloy".
    voice = str(rng.choice((*ESPEAK_VOICES, "hibari")))
    if voice == "hibari" and not _hibari_available():
        voice = "alloy"
    speed, pitch = float(rng.uniform(0.9, 1.15)), float(rng.uniform(0.88, 1.12))
    lines = rng.choice(len(AGENT_LINES), size=int(rng.integers(2, 4)), replace=False)
    parts: list[npt.NDArray[np.float64]] = [np.zeros(RATE_HZ // 2)]
    spans = []
    at = RATE_HZ // 2
    for i in lines:
        x = voice_line(AGENT_LINES[i], voice, speed, pitch)
        spans.append((at, at + len(x)))
        pause = np.zeros(int(rng.uniform(0.15, 0.6) * RATE_HZ))
        parts += [x, pause]
        at += len(x) + len(pause)
    parts.append(np.zeros(RATE_HZ))
    meta = {"agent_voice": voice, "agent_speed": round(speed, 2), "agent_pitch": round(pitch, 2)}
    return np.concatenate(parts), spans, meta


def _user_line(
    rng: np.random.Generator, total: int, spans: list[tuple[int, int]], agent_voice: str
) -> tuple[npt.NDArray[np.float64], int | None, dict[str, Any]]:
    where = str(rng.choice(["start", "middle", "end", "none"], p=[0.3, 0.3, 0.2, 0.2]))
    voice = str(rng.choice([v for v in ESPEAK_VOICES if v != agent_voice]))
    text = USER_LINES[int(rng.integers(len(USER_LINES)))]
    line = voice_line(text, voice, float(rng.uniform(0.9, 1.15)), float(rng.uniform(0.88, 1.12)))
    meta: dict[str, Any] = {"double_talk": where}
    if where == "none":
        return line, None, meta
    first, last = spans[0][0], spans[-1][1]
    if where == "start":
        at = first + int(rng.uniform(0.2, 1.5) * RATE_HZ)
    elif where == "middle":
        at = int(rng.uniform(first + 3 * RATE_HZ, max(last - 4 * RATE_HZ, first + 3 * RATE_HZ + 1)))
    else:
        at = last - int(rng.uniform(0.5, 2.0) * RATE_HZ)
    at = min(at, total - len(line))
    meta.update(user_voice=voice, user_line=text, user_at_s=round((at - first) / RATE_HZ, 2))
    return line, at, meta


def generate(seed: int) -> Scene:
    """The scene of ``seed`` (same seed, same scene, on any machine)."""
    rng = np.random.default_rng(seed)
    rt60, drr = float(rng.uniform(0.2, 1.0)), float(rng.uniform(-20, 6))
    h = room_response(rng, rt60, drr)
    played, spans, meta = _agent_turn(rng)
    played = _scale(played, float(rng.uniform(-24, -18)))
    kinds, targets, probs = zip(*SPEAKERS, strict=True)
    which = int(rng.choice(len(kinds), p=probs))
    radiated, spk = loudspeaker(rng, played, targets[which], small=bool(rng.random() < 0.5))
    late_ms = float(rng.uniform(-50, 50)) if rng.random() < 0.5 else 0.0
    ppm = float(rng.uniform(-100, 100)) if rng.random() < 0.5 else 0.0
    shift = round(late_ms * RATE_HZ / 1000)
    radiated = np.roll(np.concatenate([radiated, np.zeros(abs(shift))]), shift)[: len(played)]
    echo = drift(signal.fftconvolve(radiated, h)[: len(played)], ppm)
    line, at, user_meta = _user_line(rng, len(played), spans, meta["agent_voice"])
    user = np.zeros(len(played))
    user_level = float(rng.uniform(-42, -30))
    span = None
    if at is not None:
        user[at : at + len(line)] = _scale(line, user_level)
        span = (at, at + len(line))
    echo_over_user = float(rng.uniform(0, 12))
    active = np.zeros(len(played), dtype=bool)
    for a, b in spans:
        active[a:b] = True
    rms = math.sqrt(float(np.mean(echo[active] ** 2)))
    echo *= 32768 * 10 ** ((user_level + echo_over_user) / 20) / rms
    gain = 10 ** (float(rng.uniform(-6, 6)) / 20)
    noise_dbfs = float(rng.uniform(-80, -60))
    noise = rng.standard_normal(len(played)) * 32768 * 10 ** (noise_dbfs / 20)
    echo, user = echo * gain, user * gain
    mic = np.clip(np.round(echo + user + noise), -32768, 32767).astype(np.int16)
    meta.update(
        user_meta,
        rt60_s=round(rt60, 2),
        drr_db=round(drr, 1),
        speaker=kinds[which],
        **spk,
        latency_error_ms=round(late_ms, 1),
        drift_ppm=round(ppm, 1),
        echo_over_user_db=round(echo_over_user, 1),
        gain_db=round(20 * math.log10(gain), 1),
        noise_dbfs=round(noise_dbfs, 1),
    )
    ref = np.clip(np.round(played), -32768, 32767).astype(np.int16)
    return Scene(seed, ref, mic, echo, user, spans, span, meta)
