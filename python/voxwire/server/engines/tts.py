"""Offline text-to-speech: hibari (a small neural voice, optional) or espeak-ng through ctypes.

hibari (the ``hibari`` extra: ``hibari-tts``, Apache-2.0, an 8 MB int8 ONNX model run by
onnxruntime) speaks 24 kHz directly. espeak-ng is the server's default voice (the issue's
choice: no model, any platform, ~20 MB); ``Voice.load("auto")`` takes hibari only when espeak-ng
is missing, and ``Voice.load("hibari")`` chooses it.

The library and its voice data come from the ``espeakng-loader`` wheel (the ``server`` extra), so
no system package is needed; a system ``libespeak-ng`` is used if the wheel is absent, and
``VOXWIRE_ESPEAK_LIBRARY`` / ``VOXWIRE_ESPEAK_DATA`` choose another build. The wheel
is located with ``importlib`` rather than imported: only its files are needed, not its code.

espeak-ng speaks 22.05 kHz PCM16 and reports where each word starts (``espeakEVENT_WORD``: the
word's character position and its sample). :class:`Voice` resamples that to the session's output
format with the Rust core — ``audio/pcm`` 24 kHz, or 8 kHz then G.711 µ-law / A-law — and maps
the word marks to byte offsets in that audio, so transcript deltas can be sent next to the audio
they describe.

espeak-ng keeps global state and is not thread-safe: one engine per process, one worker thread
per :class:`Voice`, and a lock around every synthesis.

hibari reports no word positions: each sentence is synthesised on its own, and within a sentence
the words are placed over its voiced span in proportion to their length — an estimate, close
enough to send each transcript delta next to the audio it describes. It has one voice in its
wheel (``heart``, American English); the others download on first use, which an offline server
must not do, so every service voice name speaks with ``heart``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from voxwire.audio import Resampler, g711
from voxwire.exceptions import ConfigurationError
from voxwire.server.engines.worker import Worker

__all__ = [
    "ENGINES",
    "EspeakEngine",
    "HibariEngine",
    "NoVoiceError",
    "Speech",
    "SpeechEngine",
    "SpokenAudio",
    "Voice",
]

_AUDIO_OUTPUT_SYNCHRONOUS: Final = 2
_INITIALIZE_DONT_EXIT: Final = 0x8000
_POS_CHARACTER: Final = 1
_CHARS_UTF8: Final = 1
_EVENT_LIST_TERMINATED: Final = 0
_EVENT_WORD: Final = 1
_PARAM_RATE: Final = 1
_DEFAULT_RATE_WPM: Final = 175
_MIN_RATE_WPM: Final = 80
_MAX_RATE_WPM: Final = 450
_OUTPUT_RATES_HZ: Final = {"audio/pcm": 24_000, "audio/pcmu": 8_000, "audio/pcma": 8_000}

#: The service's voice names mapped to espeak-ng voices (a language plus a variant).
VOICE_MAP: Final[Mapping[str, str]] = {
    "alloy": "en-us",
    "ash": "en-us+m3",
    "ballad": "en+m2",
    "cedar": "en-us+m1",
    "coral": "en-us+f2",
    "echo": "en-us+m7",
    "marin": "en-us+f3",
    "sage": "en+f4",
    "shimmer": "en-us+f5",
    "verse": "en-gb-x-rp+m2",
}
_FALLBACK_VOICE: Final = "en-us"

INSTALL_HINT: Final = (
    "no text-to-speech voice is available: install the server extra "
    "(pip install 'voxwire[server]', which brings the espeakng-loader wheel with espeak-ng), "
    "or start the server with tts=None (voxwire serve --no-audio) to answer in text only"
)
HIBARI_HINT: Final = (
    "the hibari voice is not available: install it with pip install 'voxwire[hibari]' "
    "(the hibari-tts wheel, 14 MB), choose tts='espeak' (voxwire serve --tts espeak), "
    "or start the server with tts=None (voxwire serve --no-audio) to answer in text only"
)
AUTO_HINT: Final = (
    "no text-to-speech voice is available: install one, espeak-ng (pip install 'voxwire[server]') "
    "or hibari (pip install 'voxwire[hibari]'), or start the server with tts=None "
    "(voxwire serve --no-audio) to answer in text only"
)
#: What ``Voice.load`` and ``RealtimeServer(tts=...)`` accept (``None``, text only, aside).
ENGINES: Final = ("auto", "hibari", "espeak")
_HIBARI_VOICE: Final = "heart"
_HIBARI_MIN_SPEED: Final = 0.5
_HIBARI_MAX_SPEED: Final = 2.0
# A 10 ms window above this RMS (float samples) counts as voiced when placing words.
_VOICED_RMS: Final = 0.01
_WORD: Final = re.compile(r"\S+")


class NoVoiceError(ConfigurationError):
    """No speech engine could be loaded; the message says what to install. ``reason`` is the
    short cause alone ("not installed", "... could not be loaded: ..."), for callers that give
    their own advice (``voxwire demo`` has no ``--no-audio``)."""

    def __init__(self, hint: str, reason: str | None = None) -> None:
        super().__init__(f"{hint} ({reason})" if reason else hint)
        self.reason = reason or "not installed"


class _Event(ctypes.Structure):
    _fields_ = (
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", ctypes.c_char * 8),
    )


_Callback = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event)
)


@dataclass(frozen=True)
class Speech:
    """Synthesised PCM16 at ``rate_hz`` and where each word starts: ``(char, sample)``."""

    pcm: npt.NDArray[np.int16]
    rate_hz: int
    word_marks: list[tuple[int, int]]


@dataclass(frozen=True)
class SpokenAudio:
    """Speech in a wire format: the audio and ``(char offset, byte offset)`` word marks."""

    audio: bytes
    bytes_per_ms: float
    word_marks: list[tuple[int, int]]


def _find_library() -> tuple[str, str | None]:
    """Path of ``libespeak-ng`` and of its data directory (``None``: the library's default).

    ``VOXWIRE_ESPEAK_LIBRARY`` (and optionally ``VOXWIRE_ESPEAK_DATA``) name a library of the
    user's own; otherwise the ``espeakng-loader`` wheel's, otherwise the system's.
    """
    override = os.environ.get("VOXWIRE_ESPEAK_LIBRARY")
    if override:
        if not Path(override).is_file():
            raise NoVoiceError(INSTALL_HINT, f"VOXWIRE_ESPEAK_LIBRARY={override} is not a file")
        return override, os.environ.get("VOXWIRE_ESPEAK_DATA")
    spec = importlib.util.find_spec("espeakng_loader")
    if spec is not None and spec.submodule_search_locations:
        base = Path(next(iter(spec.submodule_search_locations)))
        for name in ("libespeak-ng.so", "libespeak-ng.dylib", "espeak-ng.dll"):
            if (base / name).exists():
                return str(base / name), str(base / "espeak-ng-data")
    system = ctypes.util.find_library("espeak-ng")
    if system is not None:
        return system, None
    raise NoVoiceError(INSTALL_HINT)


class EspeakEngine:
    """The espeak-ng library, initialised once per process (see :meth:`shared`)."""

    name = "espeak"
    _shared: EspeakEngine | None = None
    _shared_lock = threading.Lock()

    def __init__(self) -> None:
        library, data = _find_library()
        try:
            lib = ctypes.CDLL(library)
        except OSError as exc:
            raise NoVoiceError(INSTALL_HINT, f"{library} could not be loaded: {exc}") from None
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_Synth.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        rate_hz = lib.espeak_Initialize(
            _AUDIO_OUTPUT_SYNCHRONOUS,
            0,
            data.encode() if data is not None else None,
            _INITIALIZE_DONT_EXIT,
        )
        if rate_hz <= 0:
            raise NoVoiceError(INSTALL_HINT, f"espeak-ng found no voice data at {data}")
        self._lib = lib
        self.rate_hz = int(rate_hz)
        self._lock = threading.Lock()
        self._chunks: list[bytes] = []
        self._marks: list[tuple[int, int]] = []
        # Keep the callback object alive as long as the library may call it.
        self._callback = _Callback(self._on_audio)
        lib.espeak_SetSynthCallback(self._callback)
        self.voices = {
            name: target if lib.espeak_SetVoiceByName(target.encode()) == 0 else _FALLBACK_VOICE
            for name, target in VOICE_MAP.items()
        }

    @classmethod
    def shared(cls) -> EspeakEngine:
        """The process-wide engine; raises :class:`NoVoiceError` if espeak-ng is missing."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    def _on_audio(
        self, wav: ctypes._Pointer[ctypes.c_short], n_samples: int, events: ctypes._Pointer[_Event]
    ) -> int:
        if n_samples > 0:
            self._chunks.append(ctypes.string_at(wav, n_samples * 2))
        index = 0
        while events[index].type != _EVENT_LIST_TERMINATED:
            event = events[index]
            if event.type == _EVENT_WORD:
                # espeak counts characters from 1.
                self._marks.append((event.text_position - 1, event.sample))
            index += 1
        return 0

    def synthesize(self, text: str, voice: str, speed: float = 1.0) -> Speech:
        """Speak ``text`` with the service voice name ``voice`` (blocking; thread-safe)."""
        target = self.voices.get(voice, _FALLBACK_VOICE)
        rate_wpm = round(_DEFAULT_RATE_WPM * speed)
        rate_wpm = min(_MAX_RATE_WPM, max(_MIN_RATE_WPM, rate_wpm))
        encoded = text.encode("utf-8")
        with self._lock:
            self._chunks, self._marks = [], []
            self._lib.espeak_SetVoiceByName(target.encode())
            self._lib.espeak_SetParameter(_PARAM_RATE, rate_wpm, 0)
            status = self._lib.espeak_Synth(
                encoded, len(encoded) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None
            )
            chunks, marks = self._chunks, self._marks
            self._chunks, self._marks = [], []
        if status != 0:
            raise RuntimeError(f"espeak-ng failed to synthesise (status {status})")
        pcm = np.frombuffer(b"".join(chunks), dtype="<i2").astype(np.int16)
        return Speech(pcm=pcm, rate_hz=self.rate_hz, word_marks=marks)


class SpeechEngine(Protocol):
    """Text to PCM16 with word marks (blocking; called on the :class:`Voice`'s worker thread)."""

    name: str

    def synthesize(self, text: str, voice: str, speed: float = 1.0) -> Speech: ...


class HibariEngine:
    """The hibari voice (``hibari-tts``): 24 kHz neural speech from an int8 ONNX model.

    One onnxruntime thread: a sentence takes tens of milliseconds, and the other core stays free
    for the event loop. The noise component is seeded, so the same text gives the same audio.
    """

    name = "hibari"
    _shared: HibariEngine | None = None
    _shared_lock = threading.Lock()

    def __init__(self) -> None:
        if importlib.util.find_spec("hibari") is None:
            raise NoVoiceError(HIBARI_HINT)
        try:
            from hibari import Hibari
            from hibari.voices import voice_path
        except ImportError as exc:
            raise NoVoiceError(HIBARI_HINT, f"hibari could not be imported: {exc}") from None
        try:
            # The voice in the wheel, never a download: the server works offline.
            model = voice_path(_HIBARI_VOICE, download_missing=False)
            self._tts: Any = Hibari(voice=_HIBARI_VOICE, model=model, threads=1)
        except (RuntimeError, OSError, ValueError) as exc:
            raise NoVoiceError(HIBARI_HINT, f"its model could not be loaded: {exc}") from None
        # Its text-to-phoneme tables load on first use (~0.3 s): here, at server start, rather
        # than in the first response.
        self._tts.g2p  # noqa: B018
        self.rate_hz = int(self._tts.sample_rate)
        self._lock = threading.Lock()

    @classmethod
    def shared(cls) -> HibariEngine:
        """The process-wide engine; raises :class:`NoVoiceError` if hibari is missing."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    def synthesize(self, text: str, voice: str, speed: float = 1.0) -> Speech:
        """Speak ``text`` (every service ``voice`` name speaks with hibari's ``heart``)."""
        speed = min(_HIBARI_MAX_SPEED, max(_HIBARI_MIN_SPEED, speed))
        parts: list[npt.NDArray[np.float32]] = []
        marks: list[tuple[int, int]] = []
        offset_samples, search_from = 0, 0
        with self._lock:
            for sentence in self._tts.split_sentences(text):
                start_char = text.find(sentence, search_from)
                if start_char < 0:  # normalised whitespace: place it where the last one ended
                    start_char = search_from
                search_from = start_char + len(sentence)
                audio = np.asarray(self._tts(sentence, speed=speed, seed=0), dtype=np.float32)
                marks += _place_words(sentence, start_char, audio, offset_samples, self.rate_hz)
                parts.append(audio)
                offset_samples += len(audio)
        samples = np.concatenate(parts) if parts else np.zeros(0, np.float32)
        pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).astype(np.int16)
        return Speech(pcm=pcm, rate_hz=self.rate_hz, word_marks=marks)


def _place_words(
    sentence: str,
    start_char: int,
    audio: npt.NDArray[np.float32],
    offset_samples: int,
    rate_hz: int,
) -> list[tuple[int, int]]:
    """``(char, sample)`` starts of the sentence's words, spread over its voiced span in
    proportion to their length (hibari reports no word timing)."""
    words = list(_WORD.finditer(sentence))
    if not words:
        return []
    window = max(1, rate_hz // 100)
    n_windows = len(audio) // window
    voiced_from, voiced_to = 0, len(audio)
    if n_windows:
        frames = audio[: n_windows * window].reshape(n_windows, window)
        voiced = np.flatnonzero(np.sqrt(np.mean(frames * frames, axis=1)) > _VOICED_RMS)
        if len(voiced):
            voiced_from, voiced_to = int(voiced[0]) * window, (int(voiced[-1]) + 1) * window
    total_chars = sum(len(word.group()) for word in words)
    marks, done_chars = [], 0
    for word in words:
        # The first word owns the sentence's leading silence too, so its transcript goes out
        # with the sentence's first audio, as espeak-ng's first word mark does.
        sample = voiced_from + (voiced_to - voiced_from) * done_chars // total_chars
        marks.append((start_char + word.start(), offset_samples + (sample if done_chars else 0)))
        done_chars += len(word.group())
    return marks


def _load_engine(engine: str) -> SpeechEngine:
    if engine == "hibari":
        return HibariEngine.shared()
    if engine == "espeak":
        return EspeakEngine.shared()
    if engine == "auto":
        reasons = []
        for name, load in (("espeak-ng", EspeakEngine.shared), ("hibari", HibariEngine.shared)):
            try:
                return load()
            except NoVoiceError as exc:
                reasons.append(f"{name}: {exc.reason}")
        raise NoVoiceError(AUTO_HINT, "; ".join(reasons))
    raise ValueError(f"voice engine {engine!r} is unknown: expected one of {', '.join(ENGINES)}")


class Voice:
    """Speech in the session's wire formats, synthesised on a worker thread it owns."""

    def __init__(self, engine: SpeechEngine) -> None:
        self._engine = engine
        self._worker = Worker("voxwire-tts")

    @property
    def engine(self) -> str:
        """``"hibari"`` or ``"espeak"``."""
        return self._engine.name

    @classmethod
    def load(cls, engine: str = "espeak") -> Voice:
        """A voice on a shared engine: ``"espeak"``, ``"hibari"``, or ``"auto"`` (espeak-ng when
        installed, else hibari). Raises :class:`NoVoiceError`, saying what to install."""
        return cls(_load_engine(engine))

    async def speak(self, text: str, voice: str, speed: float, format_type: str) -> SpokenAudio:
        return await self._worker.run(lambda: self.speak_blocking(text, voice, speed, format_type))

    def speak_blocking(self, text: str, voice: str, speed: float, format_type: str) -> SpokenAudio:
        speech = self._engine.synthesize(text, voice, speed)
        out_hz = _OUTPUT_RATES_HZ[format_type]
        if out_hz == speech.rate_hz:
            pcm = speech.pcm  # hibari speaks 24 kHz already
        else:
            resampler = Resampler(speech.rate_hz, out_hz, "hq")
            pcm = np.concatenate([resampler.process(speech.pcm), resampler.flush()])
            # Drop the filter's delay so word marks line up with the audio.
            delay = round(resampler.output_delay())
            pcm = np.ascontiguousarray(pcm[delay : delay + resampler.output_len(len(speech.pcm))])
        if format_type == "audio/pcmu":
            audio, bytes_per_sample = g711.ulaw_encode(pcm), 1
        elif format_type == "audio/pcma":
            audio, bytes_per_sample = g711.alaw_encode(pcm), 1
        else:
            audio, bytes_per_sample = pcm.astype("<i2").tobytes(), 2
        ratio = out_hz / speech.rate_hz
        marks = [
            (char, min(len(audio), round(sample * ratio) * bytes_per_sample))
            for char, sample in speech.word_marks
        ]
        return SpokenAudio(
            audio=audio, bytes_per_ms=out_hz * bytes_per_sample / 1000, word_marks=marks
        )

    def close(self) -> None:
        """Stop the worker thread (idempotent) without waiting: a synthesis in progress is
        left to finish unobserved (:meth:`wait_closed` waits for it)."""
        self._worker.close()

    async def wait_closed(self, timeout_s: float) -> None:
        """After :meth:`close`: until the synthesis in progress finished and the thread ended
        (at most ``timeout_s``), so that a stopped server leaves no thread behind."""
        await self._worker.wait_closed(timeout_s)
