"""``voxwire demo``: a spoken conversation with a voice agent, offline, on a virtual clock.

What happens: the local realtime server starts in-process (or ``--url`` names another
endpoint); the user's two lines are synthesised with the server's voice into WAV files and
played into the session through :class:`~voxwire.audio.AudioInput`; the agent — a concierge
with a tool and a handoff to a billing desk — answers into a virtual speaker
(:class:`~voxwire.audio.WavFileOutput`, with a simulated device latency) that writes what it
played to ``--out``. The user's second line comes while the billing desk is still talking: the
server's VAD hears it, the session cuts playback and truncates the item at what the speaker
played, and the demo checks that ``audio_end_ms`` equals the samples the speaker played of the
item, floored to ms. A live transcript is printed as it happens, metrics at the end.

Modules: :mod:`~voxwire.demo.script` (agents, tool, scenario, the user's lines),
:mod:`~voxwire.demo.conversation` (the virtual clock and the conversation),
:mod:`~voxwire.demo.summary` (the metrics at the end), :mod:`~voxwire.demo.room` (``--room``),
:mod:`~voxwire.demo.command` (the command line's choice between them).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from voxwire.asyncio import RealtimeSession
from voxwire.audio import WavFileOutput
from voxwire.console import Console
from voxwire.demo.conversation import Conversation, DemoError
from voxwire.demo.script import RATE_HZ, SCENARIO, USER_LINES, agents, session_config
from voxwire.demo.summary import Summary, summarise
from voxwire.quickstart import endpoint
from voxwire.server import Pacing

if TYPE_CHECKING:
    from voxwire.timeline import Timeline

__all__ = ["DemoError", "DemoOptions", "main", "run_demo"]

SPEAKER_PERIOD_MS = 20.0
SPEAKER_LATENCY_MS = 30.0  # a typical device's output latency: what a truncation must exclude
SPEAKER_PREBUFFER_MS = 60.0
SILENCE_MS = 500  # the server's VAD ends the user's turn after this much silence


@dataclass(frozen=True)
class DemoOptions:
    """What ``voxwire demo`` was asked for."""

    out: Path
    url: str | None = None
    realtime: bool = False
    json: bool = False
    report: Path | None = None  # the session's timeline as HTML (voxwire.timeline.write_report)
    verbose: bool = False  # the cut's check with its sample positions


async def run_demo(options: DemoOptions) -> Summary:
    """Run the conversation; returns what the summary reports (printed by :func:`main`)."""
    with tempfile.TemporaryDirectory(prefix="voxwire-demo-") as tmp:
        from voxwire.demo.script import synthesise_lines

        wavs = synthesise_lines(USER_LINES, Path(tmp))
        # The local server streams as fast as it can on the virtual clock, a little faster than
        # real time when paced (the hosted service also generates ahead of playback).
        fastest = Pacing(audio_pace=0, text_tokens_per_s=0)
        pacing = Pacing(audio_pace=2.0) if options.realtime else fastest
        async with endpoint(options.url, SCENARIO, pacing) as url:
            speaker = WavFileOutput(
                options.out,
                RATE_HZ,
                period_ms=SPEAKER_PERIOD_MS,
                latency_ms=SPEAKER_LATENCY_MS,
                prebuffer_ms=SPEAKER_PREBUFFER_MS,
            )
            try:
                return await _converse(options, url, speaker, wavs)
            finally:
                speaker.close()


async def _converse(
    options: DemoOptions, url: str, speaker: WavFileOutput, wavs: list[Path]
) -> Summary:
    def heard_from(item_id: str) -> float | None:
        """When the listener began hearing the item (the speaker's clock)."""
        timing = speaker.output.timing(item_id, 0)
        return None if timing is None else timing.first_sample_at

    console = Console(
        lambda: speaker.played_samples / RATE_HZ, json=options.json, started=heard_from
    )
    session = RealtimeSession(
        agents(),
        url=url,
        config=session_config(SILENCE_MS),
        audio_output=speaker,
        wait_for_session_updated=True,
        raw_server_events=options.report is not None,  # the timeline's VAD and truncation
    )
    started = time.monotonic()
    async with session:
        console.note(
            "session",
            f"connected to {session.url.split('?')[0]}; the agent plays into a virtual speaker "
            f"({SPEAKER_LATENCY_MS:.0f} ms output latency) written to {options.out}",
            url=session.url.split("?")[0],
            out=str(options.out),
        )
        conversation = Conversation(
            session,
            speaker,
            console,
            realtime=options.realtime,
            silence_ms=SILENCE_MS,
            verbose=options.verbose,
        )
        timeline = _timeline(conversation, options.report)
        follower = asyncio.create_task(conversation.follow())
        try:
            await conversation.run(USER_LINES, wavs)
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
        if timeline is not None and options.report is not None:
            from voxwire.timeline import write_report

            timeline.observe_playback(speaker.output.clock.items())
            write_report(options.report, timeline, title="voxwire demo")
        return summarise(conversation, time.monotonic() - started)


def _timeline(conversation: Conversation, report: Path | None) -> Timeline | None:
    """A timeline on the speaker's clock, fed every event the conversation follows."""
    if report is None:
        return None
    from voxwire.timeline import Timeline

    speaker = conversation.speaker
    timeline = Timeline(
        clock=lambda: speaker.played_samples / speaker.rate_hz, playback=speaker.output.clock
    )
    conversation.observe = timeline.observe
    return timeline


def main(options: DemoOptions) -> int:
    """Run the demo and print its summary; 0 if the conversation went through with every
    truncation equal to what the speaker played, 1 otherwise."""
    try:
        summary = asyncio.run(run_demo(options))
    except DemoError as exc:
        print(f"voxwire demo: {exc}")
        return 1
    summary.print(Console(lambda: summary.audio_s, json=options.json))
    return 0 if summary.ok else 1
