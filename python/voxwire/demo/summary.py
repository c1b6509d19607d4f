"""The demo's metrics summary: per agent reply what was received and heard, first delta to first
sample heard (on the speaker's clock), underruns, every interruption with its truncation point,
the received audio dropped unplayed and the truncation error (the point claimed against what the
playback clock knew, with the clock's bound), and the session's own metrics (wall clock)."""

from __future__ import annotations

from dataclasses import dataclass, field

from voxwire.console import Console, plain
from voxwire.demo.conversation import Conversation

__all__ = ["CutReport", "ItemReport", "Summary", "summarise"]


@dataclass(frozen=True)
class ItemReport:
    """One agent audio item: received and heard (ms of the item's audio), first delta -> first
    sample heard (ms of speaker time: prebuffer, device latency, waiting behind other audio)."""

    item_id: str
    received_ms: int
    heard_ms: int
    first_delta_to_heard_ms: float | None


@dataclass(frozen=True)
class CutReport:
    """An interruption of one item: the truncation sent (``audio_end_ms``, ``None``: the item was
    deleted, nothing heard), the samples the speaker had played of it, and the received audio
    dropped unplayed."""

    item_id: str
    audio_end_ms: int | None
    speaker_samples: int | None
    dropped_unplayed_ms: int | None
    rate_hz: int = 24_000
    clock_ms: float | None = None
    """What the playback clock knew was heard of the item at the cut (``None``: not known)."""
    error_ms: float | None = None
    """The truncation claimed (0 if deleted) minus ``clock_ms``: 0 to -1 ms (whole ms, floored)."""
    bound_ms: float | None = None
    """How far past the clock the listener may have been (``None``: the clock claims no bound)."""

    @property
    def exact(self) -> bool | None:
        """``audio_end_ms`` equals the samples played, floored to ms (``None``: not checkable)."""
        if self.speaker_samples is None or self.audio_end_ms is None:
            return None
        return self.speaker_samples * 1000 // self.rate_hz == self.audio_end_ms


@dataclass
class Summary:
    audio_s: float
    wall_s: float
    items: list[ItemReport] = field(default_factory=list)
    cuts: list[CutReport] = field(default_factory=list)
    underruns: int = 0
    underrun_ms: float = 0.0
    responses: int = 0
    interrupted_responses: int = 0
    mean_speech_end_to_first_audio_ms: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    errors: list[str] = field(default_factory=list)
    truncates_unanswered: int = 0

    @property
    def ok(self) -> bool:
        """Every truncation equals what was played, none is left unanswered, no error."""
        return (
            all(cut.exact is not False for cut in self.cuts)
            and not self.errors
            and not self.truncates_unanswered
        )

    def print(self, console: Console) -> None:
        if console.json:
            console.note("summary", "", **plain(self), ok=self.ok)
            return
        speed = self.audio_s / self.wall_s if self.wall_s else 0.0
        console.note(
            "summary",
            f"{self.audio_s:.2f} s of conversation in {self.wall_s:.2f} s ({speed:.1f}x real time)",
        )
        for item in self.items:
            delay = item.first_delta_to_heard_ms
            console.note(
                "summary",
                f"{item.item_id}: {item.received_ms} ms received, {item.heard_ms} ms heard, "
                f"first delta -> first sample heard "
                + ("-" if delay is None else f"{delay:.1f} ms"),
            )
        for cut in self.cuts:
            console.note("summary", _describe_cut(cut))
        console.note(
            "summary",
            f"underruns {self.underruns} ({self.underrun_ms:.0f} ms of silence); "
            f"{self.responses} responses, {self.interrupted_responses} interrupted; tokens "
            f"{self.input_tokens} in / {self.output_tokens} out; speech end -> first audio "
            + _ms(self.mean_speech_end_to_first_audio_ms)
            + " mean (wall clock)",
        )
        if self.truncates_unanswered:
            console.note("summary", f"{self.truncates_unanswered} truncate(s) not answered")
        for error in self.errors:
            console.note("summary", f"error: {error}")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def _describe_cut(cut: CutReport) -> str:
    if cut.audio_end_ms is None:
        return f"cut {cut.item_id}: deleted (nothing of it was heard)" + _truncation_error(cut)
    check = {True: "exact", False: "MISMATCH", None: "not checked"}[cut.exact]
    return (
        f"cut {cut.item_id}: audio_end_ms={cut.audio_end_ms}, speaker played "
        f"{cut.speaker_samples} samples ({check}); {cut.dropped_unplayed_ms} ms received "
        "and dropped unplayed" + _truncation_error(cut)
    )


def _truncation_error(cut: CutReport) -> str:
    if cut.clock_ms is None or cut.error_ms is None:
        return ""
    bound = (
        "no bound claimed: a local device's clock"
        if cut.bound_ms is None
        else f"the listener within +{cut.bound_ms:.3f} ms of it"
    )
    return (
        f"; truncation error {cut.error_ms:+.3f} ms against the playback clock "
        f"({cut.clock_ms:.3f} ms heard; {bound})"
    )


def summarise(conversation: Conversation, wall_s: float) -> Summary:
    """What ``conversation`` did, from its observations, its output and the session."""
    session, output = conversation.session, conversation.output
    rate = conversation.rate_hz
    cut_ms = {e.item_id: e.played_ms for e, _, _ in conversation.seen.cuts}
    items = []
    for item_id in conversation.seen.audio_items:
        received = session.protocol.audio_received_samples(item_id) * 1000 // rate
        timing = output.timing(item_id, 0)
        heard = cut_ms.get(item_id, received)
        items.append(
            ItemReport(
                item_id,
                received,
                heard or 0,
                None if timing is None else timing.first_sample_delay_ms,
            )
        )
    metrics = {(m.item_id, m.content_index): m for m in conversation.seen.interruptions}
    cuts = []
    for event, _, heard in conversation.seen.cuts:
        cut = metrics.get((event.item_id, event.content_index))
        cuts.append(
            CutReport(
                event.item_id,
                event.played_ms,
                heard,
                session.protocol.audio_received_samples(event.item_id) * 1000 // rate
                - (event.played_ms or 0),
                rate,
                clock_ms=None if cut is None else cut.clock_heard_ms,
                error_ms=None if cut is None else cut.truncation_error_ms,
                bound_ms=None if cut is None else cut.clock_bound_ms,
            )
        )
    totals = session.metrics
    mean = totals.speech_end_to_first_audio.mean_s
    return Summary(
        audio_s=conversation.speaker.played_samples / rate,
        wall_s=wall_s,
        items=items,
        cuts=cuts,
        underruns=output.underruns,
        underrun_ms=output.underrun_samples * 1000 / output.device_rate_hz,
        responses=totals.responses,
        interrupted_responses=totals.interrupted_responses,
        mean_speech_end_to_first_audio_ms=None if mean is None else mean * 1000,
        input_tokens=totals.usage.input_tokens,
        output_tokens=totals.usage.output_tokens,
        errors=[f"({e.source}) {e.message}" for e in conversation.seen.errors],
        truncates_unanswered=len(session.protocol.unacknowledged_item_truncates),
    )
