"""The session's side of an audio output: which format the server sends (:func:`output_format`)
and when the listener has heard everything (:class:`DrainWatcher`). The output path itself is
pure and lives in :mod:`voxwire.audio.sink`.

:class:`DrainWatcher` tells the session when the listener has heard the last queued sample, so
that ``agent_state`` follows what is heard rather than what the server has finished sending.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from voxwire.audio import PlaybackClock
from voxwire.protocol.config import AudioConfig, AudioFormat, AudioOutputConfig, SessionConfig

__all__ = ["DrainWatcher", "output_format"]


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


class DrainWatcher:
    """Calls ``on_drained()`` once the clock has nothing left to play.

    The clock has no callback (the device thread only pops samples), so while armed — from the
    end of a response until its audio has played out — a task polls ``buffered_samples`` every
    ``poll_s``; it ends as soon as the ring runs dry. ``arm()`` again for the next response.
    ``on_error`` gets an exception of the polling task. ``aclose()`` stops and awaits it.
    """

    def __init__(
        self,
        clock: PlaybackClock,
        on_drained: Callable[[], None],
        on_error: Callable[[BaseException], None],
        *,
        poll_s: float = 0.02,
    ) -> None:
        self._clock = clock
        self._on_drained = on_drained
        self._on_error = on_error
        self._poll_s = poll_s
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def arm(self) -> None:
        if self._closed or (self._task is not None and not self._task.done()):
            return
        self._task = asyncio.get_running_loop().create_task(
            self._poll(), name="voxwire-client-playback-drain"
        )

    async def _poll(self) -> None:
        try:
            # Polling, not an Event: the device thread that drains the ring cannot be asked to
            # call into the event loop.
            while self._clock.buffered_samples > 0:  # noqa: ASYNC110
                await asyncio.sleep(self._poll_s)
            self._on_drained()
        except Exception as exc:  # reported; CancelledError is not an Exception
            self._on_error(exc)

    async def aclose(self) -> None:
        self._closed = True
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            await asyncio.wait([task])  # its CancelledError stays in the task; ours propagates
