"""Microphone and speaker through python-sounddevice (PortAudio): ``voxwire[devices]``.

* :class:`SoundDeviceInput` opens an input stream and hands every captured block (int16,
  ``(frames, channels)``) to a callback on PortAudio's thread — typically
  :meth:`AudioInput.process <voxwire.audio.AudioInput.process>`.
* :class:`SoundDeviceOutput` owns an :class:`~voxwire.audio.AudioOutput` at the device's rate and
  fills each output buffer from it in PortAudio's callback; the stream's reported output latency
  is given to the output, so the playback clock counts what was heard.

Devices are chosen by index, by exact name, or by a unique part of the name; ``None`` is the
system default. :func:`list_devices` shows what there is. sounddevice is imported on first use,
so this module can be imported without it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from voxwire.audio._pcm import Closing, check_channels, check_positive_ms, check_rate, ms_to_samples
from voxwire.audio.output import AudioOutput
from voxwire.exceptions import AudioDeviceError

__all__ = ["SoundDeviceInput", "SoundDeviceOutput", "list_devices", "one_device", "same_device"]

Kind = Literal["input", "output"]
Latency = Literal["low", "high"] | float
DeviceSpec = int | str | None


def sounddevice_module() -> ModuleType:
    """sounddevice, or an AudioDeviceError saying what to install."""
    try:
        import sounddevice  # type: ignore[import-untyped]  # no stubs or py.typed
    except ImportError as e:
        raise AudioDeviceError(
            "audio devices need python-sounddevice: pip install 'voxwire[devices]'"
        ) from e
    except OSError as e:  # sounddevice raises OSError when it cannot load libportaudio
        raise AudioDeviceError(
            f"the PortAudio library is missing ({e}): install it with "
            "`apt install libportaudio2` (Debian/Ubuntu) or `brew install portaudio` (macOS)"
        ) from e
    module: ModuleType = sounddevice
    return module


def list_devices(kind: Kind) -> list[tuple[int, str]]:
    """``(index, name)`` of every device with ``kind`` channels."""
    sd = sounddevice_module()
    key = f"max_{kind}_channels"
    return [(int(d["index"]), str(d["name"])) for d in sd.query_devices() if d[key] > 0]


# Words that name a direction or a role, not the hardware: "MacBook Pro Microphone" and
# "MacBook Pro Speakers" are one device's two sides.
_SIDES = frozenset(
    {"microphone", "microphones", "mic", "mics", "speaker", "speakers", "input", "output", "in",
     "out", "capture", "playback", "line", "analog", "digital", "stereo", "mono", "array"}
)  # fmt: skip
# Hardware worn on the head: its microphone does not hear its speaker.
_WORN = ("headphone", "headset", "earphone", "earbud", "airpods", "buds", "hands-free", "handsfree")
_ALSA_CARD = re.compile(r"\(hw:(\d+),")


def _hardware(name: str) -> str:
    words = re.findall(r"[a-z0-9]+", name.lower())
    return " ".join(w for w in words if w not in _SIDES)


def one_device(input_index: int, input_name: str, output_index: int, output_name: str) -> bool:
    """Whether a microphone and a speaker are one device's, so the microphone hears the
    speaker: the same PortAudio device (a duplex card, a USB speakerphone, the system's default
    route), the same ALSA card (``(hw:N,…``), or names that differ only in direction words.
    Anything worn on the head (a headset, headphones, earbuds) is not: its microphone does not
    hear its speaker."""
    names = (input_name.lower(), output_name.lower())
    if any(worn in name for worn in _WORN for name in names):
        return False
    if input_index == output_index:
        return True
    cards = [_ALSA_CARD.search(name) for name in names]
    if cards[0] is not None and cards[1] is not None:
        return cards[0].group(1) == cards[1].group(1)
    hardware = _hardware(input_name)
    return bool(hardware) and hardware == _hardware(output_name)


def same_device(microphone: SoundDeviceInput, speaker: SoundDeviceOutput) -> bool:
    """:func:`one_device` for two opened-or-not sound devices."""
    return one_device(
        microphone.device_index, microphone.device_name, speaker.device_index, speaker.device_name
    )


def _resolve(kind: Kind, device: DeviceSpec) -> tuple[int, dict[str, Any]]:
    sd = sounddevice_module()
    available = list_devices(kind)
    listing = ", ".join(f"{i}: {n!r}" for i, n in available) or "none"
    hint = "" if available else " (no sound card? see docs/devices.md for ALSA's null device)"
    if device is None:
        index = int(sd.default.device[0 if kind == "input" else 1])
        if index < 0 or index not in dict(available):
            raise AudioDeviceError(f"there is no default {kind} device; available: {listing}{hint}")
    elif isinstance(device, int) and not isinstance(device, bool):
        if device not in dict(available):
            raise AudioDeviceError(
                f"no {kind} device with index {device}; available: {listing}{hint}"
            )
        index = device
    elif isinstance(device, str):
        exact = [i for i, n in available if n == device]
        partial = [i for i, n in available if device.lower() in n.lower()]
        matches = exact or partial
        if len(matches) != 1:
            what = "no" if not matches else "more than one"
            raise AudioDeviceError(
                f"{what} {kind} device named {device!r}; available: {listing}{hint}"
            )
        index = matches[0]
    else:
        raise AudioDeviceError(
            f"device={device!r} is invalid: give an index, a name or None (the default)"
        )
    return index, dict(sd.query_devices(index))


class _Stream(Closing):
    """What both directions share: device lookup, the stream's life, errors from the callback."""

    _stream: Any

    def __init__(self, kind: Kind, device: DeviceSpec, rate_hz: int | None) -> None:
        self.device_index, info = _resolve(kind, device)
        self.device_name = str(info["name"])
        default_rate = int(info["default_samplerate"])
        self.rate_hz = check_rate("rate_hz", default_rate if rate_hz is None else rate_hz)
        self._stream = None
        self.error: BaseException | None = None
        """What the stream callback raised, if it did (the stream then stopped)."""
        self.status_flags = 0
        """PortAudio over/underflow reports seen in the callback."""

    @property
    def latency_s(self) -> float | None:
        """The stream's latency as PortAudio reports it (None until started)."""
        return None if self._stream is None else float(self._stream.latency)

    @property
    def active(self) -> bool:
        return self._stream is not None and bool(self._stream.active)

    def _open(self, make: Callable[[], Any]) -> None:
        if self._stream is not None:
            raise AudioDeviceError(f"{self.device_name!r} is already open")
        sd = sounddevice_module()
        try:
            self._stream = make()
            self._stream.start()
        except sd.PortAudioError as e:
            self._stream = None
            raise AudioDeviceError(
                f"{self.device_name!r} cannot open a stream at {self.rate_hz} Hz: {e}"
            ) from e

    def stop(self) -> None:
        """Stop and close the stream (idempotent)."""
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.stop()
            stream.close()

    def close(self) -> None:
        """Same as :meth:`stop`."""
        self.stop()

    def _failed(self, e: BaseException) -> None:
        self.error = e
        raise sounddevice_module().CallbackAbort from e


class SoundDeviceInput(_Stream):
    """A microphone: captured blocks of ``block_ms`` go to a callback on PortAudio's thread.

    ``rate_hz`` defaults to the device's own rate (give it to :class:`AudioInput` as
    ``source_rate_hz``); ``channels`` to capture (the pipeline mixes them down).
    """

    def __init__(
        self,
        device: DeviceSpec = None,
        *,
        rate_hz: int | None = None,
        channels: int = 1,
        block_ms: float = 20.0,
        latency: Latency = "low",
    ) -> None:
        super().__init__("input", device, rate_hz)
        self.channels = check_channels("channels", channels)
        self.block_samples = ms_to_samples(
            check_positive_ms("block_ms", block_ms, 1000), self.rate_hz
        )
        self._latency = latency
        self.input_latency_ms = 0.0
        """The capture latency PortAudio reports once started (the echo canceller aligns by it)."""

    def start(self, callback: Callable[[npt.NDArray[np.int16]], None]) -> None:
        """Start capturing; ``callback`` gets a new int16 ``(frames, channels)`` array per block."""
        sd = sounddevice_module()

        def on_block(indata: npt.NDArray[np.int16], frames: int, when: Any, status: Any) -> None:
            if status:
                self.status_flags += 1
            try:
                callback(indata.copy())
            except Exception as e:
                self._failed(e)

        self._open(
            lambda: sd.InputStream(
                samplerate=self.rate_hz,
                blocksize=self.block_samples,
                device=self.device_index,
                channels=self.channels,
                dtype="int16",
                latency=self._latency,
                callback=on_block,
            )
        )
        self.input_latency_ms = float(self._stream.latency) * 1000


class SoundDeviceOutput(_Stream):
    """A speaker pulling from its own :class:`AudioOutput` (``output``) at the device's rate.

    ``period_ms``: the buffer PortAudio asks for each callback. The other keywords configure the
    :class:`AudioOutput`. The output latency PortAudio reports is given to it on :meth:`start`.
    """

    def __init__(
        self,
        device: DeviceSpec = None,
        *,
        rate_hz: int | None = None,
        period_ms: float = 10.0,
        latency: Latency = "low",
        prebuffer_ms: float = 40.0,
        fade_ms: float = 4.0,
        capacity_ms: float = 120_000,
    ) -> None:
        super().__init__("output", device, rate_hz)
        self.period_samples = ms_to_samples(
            check_positive_ms("period_ms", period_ms, 1000), self.rate_hz
        )
        self._latency = latency
        self.output = AudioOutput(
            self.rate_hz,
            capacity_ms=capacity_ms,
            prebuffer_ms=prebuffer_ms,
            fade_ms=fade_ms,
            now=time.monotonic,
        )

    def start(self) -> None:
        """Open the stream and start pulling from ``output``."""
        sd = sounddevice_module()

        def on_buffer(outdata: npt.NDArray[np.int16], frames: int, when: Any, status: Any) -> None:
            if status:
                self.status_flags += 1
            try:
                self.output.pull_into(outdata)
            except Exception as e:
                outdata.fill(0)
                self._failed(e)

        self._open(
            lambda: sd.OutputStream(
                samplerate=self.rate_hz,
                blocksize=self.period_samples,
                device=self.device_index,
                channels=1,
                dtype="int16",
                latency=self._latency,
                callback=on_buffer,
            )
        )
        self.output.set_output_latency(float(self._stream.latency))
