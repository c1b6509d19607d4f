"""The demo's conversation, driven on the virtual speaker's clock.

One *tick* is one device period (20 ms): the microphone side sends the frames of 20 ms of the
user's WAV (or of silence) through :class:`~voxwire.audio.AudioInput` to ``send_audio``, and
the speaker side plays one period (:meth:`~voxwire.audio.MemoryOutput.advance`). Input and
output therefore advance together on one simulated clock, the speaker's sample count.

By default ticks run as fast as the machine allows, and the clock only moves while there is
something to hear or say: while the server is still working on a reply (nothing playable yet),
the driver waits in real time without ticking, so network and server time never turn into
underruns or silence in the recording; and no tick plays past the audio received of a response
still streaming (a server pacing its audio, such as ``voxwire serve`` at 4x real time, would be
outrun while the user speaks). With ``realtime=True`` a tick is due every 20 ms of wall-clock
time and the clock never stops, as in a real conversation.

An interruption empties the output's ring (``ring.dropped_samples`` grows). The driver looks
for that before every tick, so it knows the exact speaker position of every cut — which lets
the demo check the truncation the session sent (``audio_end_ms``) against what the speaker
really played of the item.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from voxwire.asyncio import RealtimeSession
from voxwire.asyncio import events as ev
from voxwire.asyncio.observability.records import InterruptionMetrics
from voxwire.audio import AudioInput, MemoryOutput, WavFileInput
from voxwire.console import Console
from voxwire.demo.script import UserLine

__all__ = ["Conversation", "Cut", "DemoError"]

_SETTLE_S = 0.4  # quiet this long (real time) = the agent has finished its turn
_ANSWER_TIMEOUT_S = 20.0


class DemoError(Exception):
    """The conversation could not go on (the server did not answer, the connection ended)."""


@dataclass(frozen=True)
class Cut:
    """An interruption as the speaker saw it: its position (samples heard so far) when the
    output's unplayed audio was dropped, and how many ring samples were dropped."""

    at_sample: int
    dropped_samples: int


@dataclass
class Observed:
    """What the event stream has shown so far (updated by :meth:`Conversation.follow`)."""

    speech_stops: int = 0
    responses_started: int = 0
    handoff_items: set[str] | None = None  # items already queued when the handoff came
    audio_items: list[str] = field(default_factory=list)
    cuts: list[tuple[ev.AudioInterruptedEvent, Cut | None, int | None]] = field(
        default_factory=list
    )
    errors: list[ev.ErrorEvent] = field(default_factory=list)
    closed: ev.CloseEvent | None = None
    interruptions: list[InterruptionMetrics] = field(default_factory=list)
    """Each cut item's metrics: the truncation point against what the playback clock knew."""


class Conversation:
    """Plays the user's lines into ``session`` and its replies out of ``speaker``."""

    def __init__(
        self,
        session: RealtimeSession,
        speaker: MemoryOutput,
        console: Console,
        *,
        realtime: bool = False,
        silence_ms: int = 500,
        verbose: bool = False,
    ) -> None:
        self.session = session
        self.verbose = verbose
        """Print the truncation check's sample positions (``voxwire demo --verbose``)."""
        self.speaker = speaker
        self.output = speaker.output
        self.console = console
        self.realtime = realtime
        self.silence_ms = silence_ms
        self.seen = Observed()
        self.ticks = 0
        self._silence = np.zeros(speaker.period_samples, dtype=np.int16)
        self._silence_input = AudioInput(speaker.rate_hz)
        self._dropped = self.output.ring.dropped_samples
        self._last_cut: Cut | None = None
        self._truncated_at: dict[tuple[str, int], int] = {}  # item part -> speaker position
        self._started = time.monotonic()
        self.observe: Callable[[ev.SessionEvent], None] | None = None
        """Called with every event first (``voxwire demo --report``: the timeline)."""

    @property
    def rate_hz(self) -> int:
        return self.speaker.rate_hz

    # -- the clock -------------------------------------------------------------------------------

    def observe_cut(self) -> Cut | None:
        """Note an interruption that emptied the ring since the last look (called before every
        tick, so the speaker has not moved since it happened); returns the latest cut."""
        dropped = self.output.ring.dropped_samples
        if dropped != self._dropped:
            self._last_cut = Cut(self.speaker.played_samples, dropped - self._dropped)
            self._dropped = dropped
        # A cut that found the ring empty drops nothing: the truncation the session sent (the
        # ledger keeps it once confirmed) marks it instead.
        protocol = self.session.protocol
        pending = {(t.item_id, t.content_index) for t in protocol.unacknowledged_item_truncates}
        for segment in protocol.audio.segments():
            key = segment.key
            if key not in self._truncated_at and (
                key in pending or segment.truncated_at_ms is not None
            ):
                self._truncated_at[key] = self.speaker.played_samples
        return self._last_cut

    async def tick(self, frames: list[bytes] | None = None) -> None:
        """Send ``frames`` (default: 20 ms of silence) and play one period."""
        await self._audio_due()
        self.observe_cut()
        if frames is None:
            frames = self._silence_input.process(self._silence)
        for frame in frames:
            await self.session.send_audio(frame)
        self.speaker.advance(1)
        self.ticks += 1
        if self.realtime:
            due = self._started + self.speaker.played_samples / self.rate_hz
            await asyncio.sleep(max(0.0, due - time.monotonic()))
        else:
            await asyncio.sleep(0)  # let the session and the server take what was sent

    async def _audio_due(self) -> None:
        """On the virtual clock, the speaker does not play past what has arrived of a response
        still streaming: while the user speaks over it, a server that streams at its own pace
        (``voxwire serve`` at 4x real time, the hosted service) would otherwise be outrun by
        the clock, and its time would become an underrun. Real time: the clock never waits."""
        if self.realtime:
            return
        deadline = time.monotonic() + _ANSWER_TIMEOUT_S
        while (
            self.session.protocol.responses_in_progress
            and self.output.ring.readable_samples < self.speaker.period_samples
        ):
            if self.seen.closed is not None or time.monotonic() > deadline:
                return  # the callers' own waits say what went wrong
            self.observe_cut()
            await asyncio.sleep(0.002)

    async def idle(self) -> None:
        """Nothing to play yet, the server is working: wait (real time) or, paced, tick."""
        if self.realtime:
            await self.tick()
        else:
            self.observe_cut()
            await asyncio.sleep(0.002)

    def quiet(self) -> bool:
        """No response running or asked for, no tool running, nothing left to hear."""
        protocol = self.session.protocol
        return (
            not protocol.responses_in_progress
            and not protocol.unanswered_response_requests
            and protocol.held_response_creates == 0
            and not protocol.unacknowledged_item_truncates
            and self.session.tool_calls_in_progress == 0
            and self.output.unheard_samples == 0
        )

    async def wait_for(self, condition: Callable[[], bool], what: str) -> None:
        """Tick (paced) or wait until ``condition``; fail naming ``what`` after a while."""
        deadline = time.monotonic() + _ANSWER_TIMEOUT_S
        while not condition():
            if self.seen.closed is not None:
                raise DemoError(f"the connection ended ({self.seen.closed.reason}) while {what}")
            if time.monotonic() > deadline:
                raise DemoError(f"nothing happened for {_ANSWER_TIMEOUT_S:.0f} s while {what}")
            await self.idle()

    # -- the conversation ------------------------------------------------------------------------

    async def listen(self, until: Callable[[], bool] | None = None) -> bool:
        """Play the agent's turn until ``until()`` (True) or until all is quiet (False)."""
        while until is None or not until():
            if self.seen.closed is not None:
                raise DemoError(f"the connection ended ({self.seen.closed.reason})")
            if self.quiet():
                if await self._settled():
                    return False
                continue
            readable = self.output.ring.readable_samples
            streaming = bool(self.session.protocol.responses_in_progress)
            if readable >= self.speaker.period_samples or (
                self.output.unheard_samples and not streaming
            ):
                await self.tick()
            else:
                await self.idle()
        return True

    async def _settled(self) -> bool:
        until = time.monotonic() + _SETTLE_S
        while time.monotonic() < until:
            if self.realtime:
                await self.tick()
            else:
                await asyncio.sleep(0.01)
            if not self.quiet():
                return False
        return True

    async def speak(self, line: UserLine, wav: Path) -> None:
        """Say ``line`` from its WAV file, then silence until the server has ended the turn
        and started answering it."""
        source = WavFileInput(wav, block_ms=self.speaker.period_ms)
        microphone = AudioInput(source.rate_hz, source.channels)
        self.console.note(
            "user",
            f'says "{line.text}"  ({source.duration_ms / 1000:.2f} s of synthesised speech)',
            text=line.text,
            duration_ms=round(source.duration_ms),
        )
        stops, started = self.seen.speech_stops, self.seen.responses_started
        for block in source.blocks():
            await self.tick(microphone.process(block))
        await self.tick(microphone.flush())
        # Trailing silence: the server's VAD ends the turn after silence_ms of it.
        for _ in range(-(-(self.silence_ms + 300) // round(self.speaker.period_ms))):
            if self.seen.speech_stops > stops:
                break
            await self.tick()
        await self.wait_for(
            lambda: self.seen.speech_stops > stops, "waiting for the server to end the turn"
        )
        await self.wait_for(
            lambda: self.seen.responses_started > started, "waiting for an answer to the turn"
        )

    def heard_since_handoff_ms(self) -> int:
        """The most heard of one item queued after the handoff, in ms (0 before it)."""
        before = self.seen.handoff_items
        if before is None:
            return 0
        played = [p.played_ms for p in self.output.clock.items() if p.item_id not in before]
        return max(played, default=0)

    def _heard_since_handoff(self, ms: int) -> Callable[[], bool]:
        return lambda: self.heard_since_handoff_ms() >= ms

    async def run(self, lines: tuple[UserLine, ...], wavs: list[Path]) -> None:
        """The whole conversation: each line when its moment comes, then the last answer."""
        for line, wav in zip(lines, wavs, strict=True):
            if line.barge_in_after_ms is None:
                await self.listen()
            else:
                if not await self.listen(self._heard_since_handoff(line.barge_in_after_ms)):
                    self.console.note(
                        "note",
                        "the agent was not speaking: the next line comes without a barge-in",
                    )
            await self.speak(line, wav)
        await self.listen()

    # -- the event stream ----------------------------------------------------------------------

    async def follow(self) -> None:
        """Print every event (with the truncation check for cuts) and note what matters."""
        async for event in self.session:
            if self.observe is not None:
                self.observe(event)
            if isinstance(event, ev.RawServerEvent):
                continue  # asked for by the timeline only (--report), not for the transcript
            extra: tuple[str, dict[str, Any]] = ("", {})
            if isinstance(event, ev.UserStateChangedEvent) and event.new_state == "listening":
                self.seen.speech_stops += 1
            elif isinstance(event, ev.ResponseStartedEvent):
                self.seen.responses_started += 1
            elif isinstance(event, ev.HandoffEvent):
                self.seen.handoff_items = {p.item_id for p in self.output.clock.items()}
            elif isinstance(event, ev.AudioEndEvent) and event.item_id not in self.seen.audio_items:
                self.seen.audio_items.append(event.item_id)
            elif isinstance(event, ev.AudioInterruptedEvent):
                extra = self._check_cut(event)
            elif isinstance(event, ev.MetricsCollectedEvent) and isinstance(
                event.metrics, InterruptionMetrics
            ):
                self.seen.interruptions.append(event.metrics)
            elif isinstance(event, ev.ErrorEvent):
                self.seen.errors.append(event)
            elif isinstance(event, ev.CloseEvent):
                self.seen.closed = event
            self.console.event(event, *extra)

    def first_heard_sample(self, item_id: str, content_index: int) -> int | None:
        """The speaker position (samples heard) of the item's first sample, from the output's
        timing on the speaker's clock (``None`` if nothing of it played)."""
        timing = self.output.timing(item_id, content_index)
        if timing is None or timing.first_sample_at is None:
            return None
        return round(timing.first_sample_at * self.rate_hz)

    def _check_cut(self, event: ev.AudioInterruptedEvent) -> tuple[str, dict[str, Any]]:
        """The samples the speaker played of the cut item — from its first heard sample to the
        cut — against the ``audio_end_ms`` the session sent."""
        cut = self.observe_cut()
        if cut is None or any(cut is earlier for _, earlier, _ in self.seen.cuts):
            # Nothing was dropped (the ring was empty: the server had sent no more yet): the
            # speaker's position when the truncation was sent.
            at = self._truncated_at.get((event.item_id, event.content_index))
            cut = None if at is None else Cut(at, 0)
        first = self.first_heard_sample(event.item_id, event.content_index)
        heard = None if cut is None or first is None else max(0, cut.at_sample - first)
        self.seen.cuts.append((event, cut, heard))
        if event.item_id not in self.seen.audio_items:
            self.seen.audio_items.append(event.item_id)
        if cut is None or first is None or heard is None or event.played_ms is None:
            return "", {}
        floored = heard * 1000 // self.rate_hz
        equal = floored == event.played_ms
        text = (
            f"speaker played {heard} samples of it, {first}..{cut.at_sample} of its output "
            f"({heard * 1000 / self.rate_hz:.3f} ms, floored {floored} ms "
            + ("= audio_end_ms)" if equal else "!= audio_end_ms: MISMATCH)")
        )
        if equal and not self.verbose:  # the samples are for developers (--verbose)
            text = f"checked: the speaker played exactly {floored} ms of it"
        fields = {
            "speaker_first_sample": first,
            "speaker_cut_sample": cut.at_sample,
            "heard_samples": heard,
            "heard_floor_ms": floored,
            "equals_audio_end_ms": equal,
            "dropped_ring_samples": cut.dropped_samples,
        }
        return text, fields
