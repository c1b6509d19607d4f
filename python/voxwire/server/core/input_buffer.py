"""The input audio buffer and the input timeline.

Audio arrives in the session's input format (``audio/pcm`` 24 kHz PCM16, or G.711 µ-law / A-law
at 8 kHz). The buffer keeps the bytes as sent, because the user item made from it holds them as
sent; the timeline counts every sample ever appended, because ``audio_start_ms`` /
``audio_end_ms`` of the VAD events are positions on it (GA: "milliseconds from the start of all
audio written to the buffer during the session").
"""

from __future__ import annotations

from typing import Final

from voxwire.protocol import samples_to_ms
from voxwire.protocol.units import SampleFormat
from voxwire.server.core.errors import ServerError

__all__ = ["MAX_APPEND_BYTES", "MAX_BUFFER_BYTES", "MIN_COMMIT_MS", "InputAudioBuffer"]

#: GA reference: "the client may choose how much audio to place in each event up to a maximum
#: of 15 MiB".
MAX_APPEND_BYTES: Final = 15 * 1024 * 1024
#: What the buffer holds at most between commits: the same 15 MiB (5 min 27 s of 24 kHz PCM16,
#: 32 min of G.711), so a client flooding audio without committing costs bounded memory. The GA
#: reference publishes no figure for the whole buffer (docs/server.md, "Limits").
MAX_BUFFER_BYTES: Final = MAX_APPEND_BYTES
#: A commit needs at least this much audio (``input_audio_buffer_commit_empty``).
MIN_COMMIT_MS: Final = 100


class InputAudioBuffer:
    """Bytes appended since the last commit or clear, and the session's input timeline."""

    def __init__(self, sample_format: SampleFormat) -> None:
        self._format = sample_format
        self._data = bytearray()
        self._start_samples = 0  # timeline position of the first byte in the buffer
        self._timeline_samples = 0  # every sample ever appended
        # The buffer overflowed since the last commit or clear: the first dropped append got an
        # error; the next ones are dropped without one, so a client flooding audio (and reading
        # nothing) does not make the server queue an error per append it refuses.
        self._overflowed = False

    @property
    def sample_format(self) -> SampleFormat:
        return self._format

    def set_format(self, sample_format: SampleFormat) -> None:
        """A ``session.update`` changed the input format; audio buffered so far is dropped."""
        if sample_format != self._format:
            self._format = sample_format
            self.clear()

    @property
    def duration_ms(self) -> int:
        return samples_to_ms(len(self._data) // self._format.bytes_per_sample, self._format)

    @property
    def timeline_ms(self) -> int:
        return samples_to_ms(self._timeline_samples, self._format)

    @property
    def start_ms(self) -> int:
        """Timeline position of the buffer's first sample."""
        return samples_to_ms(self._start_samples, self._format)

    def append(self, audio: bytes) -> None:
        if len(audio) > MAX_APPEND_BYTES:
            raise ServerError(
                "invalid_value",
                f"Invalid 'audio': the audio is {len(audio)} bytes; at most "
                f"{MAX_APPEND_BYTES} bytes (15 MiB) may be appended at once.",
                param="audio",
            )
        if len(self._data) + len(audio) > MAX_BUFFER_BYTES:
            if self._overflowed:
                return
            self._overflowed = True
            raise ServerError(
                "input_audio_buffer_full",
                f"Input audio buffer is full: it holds {len(self._data)} bytes and at most "
                f"{MAX_BUFFER_BYTES} bytes (15 MiB); this append of {len(audio)} bytes was "
                "dropped, and so are the next ones (without another error) until the buffer is "
                "committed (input_audio_buffer.commit) or cleared.",
                param="audio",
            )
        self._data += audio
        self._timeline_samples += len(audio) // self._format.bytes_per_sample

    def take(self) -> bytes:
        """Commit: the buffered audio (at least 100 ms), leaving the buffer empty."""
        duration_ms = len(self._data) / self._format.bytes_per_sample * 1000
        duration_ms /= self._format.sample_rate_hz
        if duration_ms < MIN_COMMIT_MS:
            raise ServerError(
                "input_audio_buffer_commit_empty",
                "Error committing input audio buffer: buffer too small. Expected at least "
                f"{MIN_COMMIT_MS}ms of audio, but buffer only has {duration_ms:.2f}ms of audio.",
            )
        return self.take_all()

    def take_all(self) -> bytes:
        data = bytes(self._data)
        self.clear()
        return data

    def drop_before(self, timeline_ms: int) -> None:
        """Forget buffered audio before ``timeline_ms`` (VAD keeps only the prefix padding)."""
        keep_from = timeline_ms * self._format.sample_rate_hz // 1000
        drop_samples = max(0, keep_from - self._start_samples)
        drop_bytes = min(len(self._data), drop_samples * self._format.bytes_per_sample)
        del self._data[:drop_bytes]
        self._start_samples += drop_bytes // self._format.bytes_per_sample

    def clear(self) -> None:
        self._data.clear()
        self._overflowed = False
        self._start_samples = self._timeline_samples
