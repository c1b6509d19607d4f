"""The session's side of an audio output (``RealtimeSession(audio_output=...)``).

* :func:`output_path` turns what the application attached into an :class:`OutputPath` — the
  one face the session's parts use: ``push`` / ``end`` a content part's deltas, ``interrupt``
  (what each cut item had been heard), and the ``clock`` to watch. A bare
  :class:`~voxwire.audio.PlaybackClock` gets a :class:`~voxwire.audio.PlaybackSink` over it; an
  :class:`~voxwire.audio.AudioOutput` (or a speaker holding one as ``.output``:
  ``MemoryOutput``, ``WavFileOutput``, ``SoundDeviceOutput``) is used as it is
  (:class:`AudioOutputPath`), so its prebuffer, fade, output latency and underrun counts apply.
* :class:`AudioOutputFeed` feeds that path (G.711 decode, resampling, clock push) in the format
  the server says it sends (:func:`output_format`): protocol-neutral ``feed`` / ``end`` /
  ``interrupt`` / ``heard_samples`` per segment, used by ``LiveSession``, and Realtime's audio
  events turned into those calls, used by ``RealtimeSession``.
* :class:`PlaybackMonitor` is the one watcher of the clock. A
  :class:`~voxwire.audio.PlaybackClock` has no callback — the audio device pops its ring from
  its own thread — so while anyone waits for what the listener hears (the first sample of a
  response, for metrics; the last queued sample, so that ``agent_state`` stays ``speaking``
  until the listener has heard everything), one task looks at the clock: every 5 ms while a
  first sample is awaited, every 20 ms while only the drain is. It runs only in those windows;
  the session owns it and awaits it on close.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final, Protocol, TypeAlias

import voxwire.asyncio.events as ev
from voxwire.audio import AudioOutput, ItemPlayback, PlaybackClock, PlaybackSink, RemoteOutput
from voxwire.protocol import server_events as se
from voxwire.protocol.audio_ledger import SegmentKey
from voxwire.protocol.config import AudioConfig, AudioFormat, AudioOutputConfig, SessionConfig

__all__ = [
    "AudioOutputFeed",
    "AudioOutputPath",
    "AudioOutputTarget",
    "ClockPath",
    "HasAudioOutput",
    "OutputPath",
    "PlaybackMonitor",
    "output_format",
    "output_path",
]


class OutputPath(Protocol):
    """Where a session's assistant audio goes (:class:`~voxwire.audio.PlaybackSink` is one)."""

    @property
    def clock(self) -> PlaybackClock: ...

    @property
    def unheard_samples(self) -> int: ...

    def push(self, key: SegmentKey, data: bytes, format_type: str, rate_hz: int) -> int: ...

    def end(self, key: SegmentKey) -> int: ...

    def interrupt(self) -> list[ItemPlayback]: ...


class HasAudioOutput(Protocol):
    """A speaker holding its :class:`~voxwire.audio.AudioOutput` as ``.output``."""

    @property
    def output(self) -> AudioOutput: ...


AudioOutputTarget: TypeAlias = PlaybackClock | AudioOutput | HasAudioOutput
"""What ``RealtimeSession(audio_output=...)`` accepts."""


def attached_output(target: object) -> PlaybackClock | AudioOutput | None:
    """The clock or output behind ``target``, or ``None`` if it is neither (nor holds one)."""
    if isinstance(target, PlaybackClock | AudioOutput):
        return target
    inner = getattr(target, "output", None)
    return inner if isinstance(inner, AudioOutput) else None


class ClockPath(PlaybackSink):
    """A bare :class:`~voxwire.audio.PlaybackClock` as a session's output path: what the device
    has not popped from the ring is what the listener has not heard."""

    @property
    def unheard_samples(self) -> int:
        return self.clock.buffered_samples


class AudioOutputPath:
    """An :class:`~voxwire.audio.AudioOutput` as a session's output path: deltas through its
    ``push`` / ``end`` (part tracking: prebuffer, underruns, first-sample timings), cuts through
    its ``interrupt`` (drop the unplayed audio, fade out)."""

    def __init__(self, output: AudioOutput) -> None:
        self.output = output

    @property
    def clock(self) -> PlaybackClock:
        return self.output.clock

    @property
    def unheard_samples(self) -> int:
        return self.output.unheard_samples

    def push(self, key: SegmentKey, data: bytes, format_type: str, rate_hz: int) -> int:
        return self.output.push(key[0], key[1], data, format_type, rate_hz)

    def end(self, key: SegmentKey) -> int:
        return self.output.end(*key)

    def interrupt(self) -> list[ItemPlayback]:
        return self.output.interrupt()

    def underruns(self) -> int:
        """How often the output ran dry while a part was playing (for metrics)."""
        return self.output.underruns


def heard_bound_ms(path: OutputPath) -> float | None:
    """How far the listener may be past what ``path``'s clock counts as heard, in ms: for a
    :class:`~voxwire.audio.RemoteOutput`, its ``heard_bound_samples`` (one chunk, or one
    acknowledgement's span); ``None`` for a local device or a bare clock (no
    bound is known: the heard position there is what the device took minus the latency it
    reports)."""
    if isinstance(path, AudioOutputPath) and isinstance(path.output, RemoteOutput):
        return path.output.heard_bound_samples * 1000 / path.output.device_rate_hz
    return None


def output_path(target: AudioOutputTarget | None) -> OutputPath | None:
    """The path for what the application attached (checked by ``SessionOptions``)."""
    if target is None:
        return None
    attached = attached_output(target)
    if attached is None:
        raise TypeError(f"audio_output={target!r}: not a PlaybackClock or an AudioOutput")
    if isinstance(attached, AudioOutput):
        return AudioOutputPath(attached)
    return ClockPath(attached)


def output_format(session: SessionConfig | None) -> tuple[str, int]:
    """``(format type, rate_hz)`` of the audio the server sends (``audio/pcm`` 24 kHz unless
    configured)."""
    if (
        session is not None
        and isinstance(session.audio, AudioConfig)
        and isinstance(session.audio.output, AudioOutputConfig)
        and isinstance(session.audio.output.format, AudioFormat)
    ):
        fmt = session.audio.output.format
        return fmt.type, fmt.sample_format.sample_rate_hz
    return "audio/pcm", 24_000


class PlaybackMonitor:
    """Watches one output path for whoever waits (see the module docstring).

    ``watch_first_sample(response_id, key, on_played)``: call ``on_played(response_id)`` once
    the part ``key`` started playing (or the clock already forgot it: it played to its end).
    ``cut()`` forgets those watches (an interruption dropped the audio).
    ``watch_played_out(keys, on_done)``: call ``on_done()`` once no part in ``keys`` has audio
    left in the clock (played to its end, or cut). ``arm_drain()``: call
    ``on_drained()`` once the listener heard everything (nothing queued, nothing left in the
    device buffer). ``on_error`` gets an exception of
    the polling task, which then stops; ``aclose()`` stops and awaits it.
    """

    FIRST_SAMPLE_POLL_S = 0.005
    DRAIN_POLL_S = 0.02

    def __init__(
        self,
        output: OutputPath,
        on_drained: Callable[[], None],
        on_error: Callable[[BaseException], None],
    ) -> None:
        self.output = output
        self._on_drained = on_drained
        self._on_error = on_error
        self._first: dict[str, tuple[SegmentKey, Callable[[str], None]]] = {}
        self._played_out: list[tuple[tuple[SegmentKey, ...], Callable[[], None]]] = []
        self._drain_armed = False
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def playing(self) -> bool:
        """Audio is queued that the listener has not heard yet."""
        return self.output.unheard_samples > 0

    def watch_first_sample(
        self, response_id: str, key: SegmentKey, on_played: Callable[[str], None]
    ) -> None:
        if self._closed or response_id in self._first:
            return
        self._first[response_id] = (key, on_played)
        self._start()

    def watch_played_out(self, keys: tuple[SegmentKey, ...], on_done: Callable[[], None]) -> None:
        if self._closed:
            return
        self._played_out.append((keys, on_done))
        self._start()

    def cut(self) -> None:
        self._first.clear()

    def arm_drain(self) -> None:
        if self._closed:
            return
        self._drain_armed = True
        self._start()

    async def aclose(self) -> None:
        self._closed = True
        self._first.clear()
        self._played_out.clear()
        self._drain_armed = False
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            await asyncio.wait([task])  # its CancelledError stays in the task; ours propagates

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._poll(), name="voxwire-client-playback"
            )

    async def _poll(self) -> None:
        try:
            while self._first or self._drain_armed or self._played_out:
                self._check_first_samples()
                self._check_played_out()
                if self._drain_armed and self.output.unheard_samples == 0:
                    self._drain_armed = False
                    self._on_drained()
                if self._first or self._drain_armed or self._played_out:
                    fast = bool(self._first)
                    await asyncio.sleep(self.FIRST_SAMPLE_POLL_S if fast else self.DRAIN_POLL_S)
        except Exception as exc:  # reported by the owner; CancelledError passes through
            self._first.clear()
            self._played_out.clear()
            self._drain_armed = False
            self._on_error(exc)

    def _check_played_out(self) -> None:
        clock = self.output.clock
        for watch in list(self._played_out):
            keys, on_done = watch
            if all(_left(clock.played(*key)) == 0 for key in keys):
                self._played_out.remove(watch)
                on_done()

    def _check_first_samples(self) -> None:
        for response_id, (key, on_played) in list(self._first.items()):
            playback = self.output.clock.played(*key)
            if playback is None or playback.started:
                del self._first[response_id]
                on_played(response_id)


def _left(playback: ItemPlayback | None) -> int:
    """Samples of a part not played yet (0 once the clock forgot the part)."""
    return 0 if playback is None else max(0, playback.queued_samples - playback.played_samples)


class AudioOutputFeed:
    """Assistant audio into the output path, for either session.

    The protocol-neutral entry points: :meth:`feed` one delta of an assistant segment
    (``item_id``, ``content_index``: a Realtime content part; Live names its own segments),
    :meth:`end` a segment, :meth:`interrupt` (drop what is unheard, returns what each segment
    had been heard), :meth:`heard_samples` of a segment. ``on_server_event`` turns Realtime's
    audio events into those calls (a server-event consumer of ``RealtimeSession``).

    ``session()`` gives the server's session configuration (the output format; ``None``: PCM16
    at 24 kHz); ``pushed(response_id, key)`` is told when audio of a Realtime response went
    into the clock (for metrics); ``emit`` reports a ring that refused samples, once per
    segment."""

    server_event_types: Final = frozenset(
        {se.ResponseOutputAudioDelta, se.ResponseOutputAudioDone, se.ResponseDone}
    )

    def __init__(
        self,
        path: OutputPath,
        session: Callable[[], SessionConfig | None],
        pushed: Callable[[str, SegmentKey], None],
        emit: Callable[[ev.SessionEvent], None],
    ) -> None:
        self.path = path
        self._session = session
        self._pushed = pushed
        self._emit = emit
        self._overflow_reported: set[SegmentKey] = set()
        # The output format, read again only when the server's session changes (a new
        # SessionConfig object), not for every delta.
        self._format_of: SessionConfig | None = None
        self._format = output_format(None)

    # --- protocol-neutral -----------------------------------------------------------------------

    def feed(self, item_id: str, pcm: bytes, content_index: int = 0) -> int:
        """Queue one delta of the segment, in the session's output format; returns the samples
        the ring refused (reported once per segment as an ``error`` event)."""
        session = self._session()
        if session is not self._format_of:
            self._format_of, self._format = session, output_format(session)
        format_type, rate_hz = self._format
        key = (item_id, content_index)
        refused = self.path.push(key, pcm, format_type, rate_hz)
        if refused:
            self._report_overflow(key, refused)
        return refused

    def end(self, item_id: str, content_index: int = 0) -> None:
        """The segment is complete: its tail may play without waiting for more."""
        key = (item_id, content_index)
        self._report_overflow(key, self.path.end(key))

    def interrupt(self) -> list[ItemPlayback]:
        """Drop every unheard sample; what each cut segment had been heard."""
        return self.path.interrupt()

    def heard_samples(self, item_id: str, content_index: int = 0) -> int | None:
        """Samples of the segment the listener has heard (``None``: the clock no longer holds
        it — it played to its end and was dropped, or was never pushed)."""
        playback = self.path.clock.played(item_id, content_index)
        return None if playback is None else playback.played_samples

    @property
    def unheard_samples(self) -> int:
        return self.path.unheard_samples

    def forget_finished(self) -> None:
        """Let the clock forget segments that played to their end."""
        self.path.clock.drop_finished()

    # --- Realtime's events ----------------------------------------------------------------------

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        if isinstance(event, se.ResponseOutputAudioDelta):
            self.feed(event.item_id, event.delta, event.content_index)
            self._pushed(event.response_id, (event.item_id, event.content_index))
        elif isinstance(event, se.ResponseOutputAudioDone):
            self.end(event.item_id, event.content_index)
        elif isinstance(event, se.ResponseDone):
            self.forget_finished()

    def _report_overflow(self, key: SegmentKey, refused_samples: int) -> None:
        if refused_samples and key not in self._overflow_reported:
            self._overflow_reported.add(key)
            self._emit(
                ev.ErrorEvent(
                    message=f"the audio output's ring is full: {refused_samples} samples of "
                    f"{key[0]} were dropped (give the audio output's ring more capacity)",
                    source="audio_output",
                )
            )
