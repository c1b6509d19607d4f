"""Python face of the Rust audio core.

* :class:`Resampler` — streaming PCM16 resampling between device rates and 24 kHz
* :func:`to_mono` — interleaved multi-channel PCM16 to mono
* :func:`read_wav` / :func:`write_wav` — 16-bit PCM WAV files (headers checked against the file)
* :func:`resampler_kernel` — which SIMD kernel the resampler runs on this CPU
* :class:`PcmRing` — lock-free SPSC ring of PCM16 between the network and the device callback
* :class:`PlaybackClock` / :class:`ItemPlayback` — how much of each assistant item was heard,
  for ``conversation.item.truncate`` / ``delete`` on interruption (docs/audio-output.md)
* :class:`PlaybackSink` — the output path: assistant audio deltas (G.711 decoded, resampled)
  into a playback clock
* :mod:`voxwire.audio.g711` — G.711 µ-law / A-law encode and decode
* :class:`AudioInput` — source audio (any rate, channels, int16/float32) to fixed frames of the
  session's input format; :class:`BargeInDetector` — local "user started speaking" with an echo gate
* :class:`AudioOutput` — ring + clock + sink at the device rate, pulled by a device: prebuffer,
  fade-out, underruns, output latency, first-sample timings (docs/audio-io.md)
* :class:`RemoteOutput` — an :class:`AudioOutput` whose listener is remote (a phone line, a
  page): sent in chunks, heard as the far end acknowledges (Twilio marks); docs/telephony.md
* :class:`MemoryInput` / :class:`WavFileInput` / :class:`SteppedInput`, :class:`MemoryOutput` /
  :class:`WavFileOutput` — sources and virtual speakers without a sound card (real time or
  stepped)
* :class:`EchoCanceller` — acoustic echo cancellation (Rust); :class:`EchoCancelledInput` — a
  microphone source with the echo of an :class:`AudioOutput` removed, aligned by the playback
  clock (:mod:`voxwire.audio.echo`); :mod:`voxwire.audio.room` — simulated rooms
* :class:`FalseInterruptionFilter` — pause on a local barge-in, then resume or cut
  (:mod:`voxwire.audio.recovery`)
* :class:`SoundDeviceInput` / :class:`SoundDeviceOutput` — microphone and speaker through
  sounddevice (``pip install 'voxwire[devices]'``); :func:`same_device` — whether a microphone
  and a speaker are one device's (the microphone hears the speaker: cancel the echo)

Every function here accepts PCM16 as ``bytes``, ``bytearray``, ``memoryview`` or a 1-D numpy
``int16`` array, and returns numpy ``int16`` arrays.
"""

from voxwire._core import (
    EchoCanceller,
    ItemPlayback,
    PcmRing,
    PlaybackClock,
    Resampler,
    resampler_kernel,
    to_mono,
)
from voxwire.audio import g711
from voxwire.audio.bargein import BargeInDetector
from voxwire.audio.devices import (
    SoundDeviceInput,
    SoundDeviceOutput,
    list_devices,
    one_device,
    same_device,
)
from voxwire.audio.echo import EchoCancelledInput, EchoReference
from voxwire.audio.input import AudioInput
from voxwire.audio.output import AudioOutput, ItemTiming
from voxwire.audio.recovery import Decision, FalseInterruptionFilter
from voxwire.audio.remote import RemoteOutput
from voxwire.audio.sink import PlaybackSink
from voxwire.audio.virtual import (
    MemoryInput,
    MemoryOutput,
    SteppedInput,
    WavFileInput,
    WavFileOutput,
)
from voxwire.audio.wav import WavAudio, read_wav, write_wav

__all__ = [
    "AudioInput",
    "AudioOutput",
    "BargeInDetector",
    "Decision",
    "EchoCancelledInput",
    "EchoCanceller",
    "EchoReference",
    "FalseInterruptionFilter",
    "ItemPlayback",
    "ItemTiming",
    "MemoryInput",
    "MemoryOutput",
    "PcmRing",
    "PlaybackClock",
    "PlaybackSink",
    "RemoteOutput",
    "Resampler",
    "SoundDeviceInput",
    "SoundDeviceOutput",
    "SteppedInput",
    "WavAudio",
    "WavFileInput",
    "WavFileOutput",
    "g711",
    "list_devices",
    "one_device",
    "read_wav",
    "resampler_kernel",
    "same_device",
    "to_mono",
    "write_wav",
]
