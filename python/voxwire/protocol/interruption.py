"""What to tell the server when the user interrupts the model: truncate, or delete.

The model's context must hold what the user heard, not what the server generated. GA
``conversation.item.truncate`` "truncates a previous assistant message's audio … the server
will produce audio faster than realtime, so this event is useful when the user interrupts to
truncate audio that has already been sent to the client but not yet played", and it removes the
transcript of the cut audio. Its ``audio_end_ms`` may not exceed the item's audio.

Given the exact played sample count of each (item, content) segment from the playback clock:

* a segment heard in part (or still streaming) is truncated at the samples played, clamped to
  the samples received, converted to whole milliseconds rounded down;
* a segment heard in full (all audio arrived and all of it played) is left alone;
* an item none of whose audio was heard is deleted instead (``conversation.item.delete``):
  a zero-length truncation would leave an assistant turn the user never heard in the context.
  That includes an assistant message of a response in progress whose audio has not arrived yet
  (``silent_items``: announced by ``response.output_item.added``, no delta so far): the user
  heard nothing of it, and the words its transcript and later audio would carry must not stay
  in the model's context. (GA's truncate cannot stand in: it names a content part's audio, and
  such an item has none yet.) An item of an interrupted response announced only after the
  interruption is deleted as it arrives (``RealtimeProtocol``, on ``conversation.item.added``).

Which segments are looked at: those of responses still in progress, and those named in
``played_samples``. Older segments not named were played out before and are left alone, as are
segments already truncated and items not (or no longer) in the conversation.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from voxwire.exceptions import ConfigurationError
from voxwire.protocol.audio_ledger import AudioSegment, SegmentKey
from voxwire.protocol.units import samples_to_ms

__all__ = ["InterruptionPlan", "plan_interruption"]


@dataclass(frozen=True)
class InterruptionPlan:
    """The client events an interruption needs, in the order they should go."""

    truncations: list[tuple[str, int, int]] = field(default_factory=list)
    """``(item_id, content_index, audio_end_ms)`` per segment heard in part."""
    deletions: list[str] = field(default_factory=list)
    """Ids of items none of whose audio was heard."""
    response_ids: list[str] = field(default_factory=list)
    """Responses whose audio was cut; their later deltas are to be dropped."""


def plan_interruption(
    segments: Iterable[AudioSegment],
    played_samples: Mapping[SegmentKey, int],
    *,
    in_progress: Collection[str],
    in_conversation: Callable[[str], bool],
    silent_items: Iterable[tuple[str, str]] = (),
) -> InterruptionPlan:
    """Decide the truncations and deletions for an interruption (see the module docstring).
    ``silent_items``: ``(item_id, response_id)`` of the assistant messages of responses in
    progress that may speak; those without audio received are deleted."""
    _check_played(played_samples)
    segments = list(segments)
    heard_by_item: dict[str, list[tuple[AudioSegment, int]]] = {}
    for segment in segments:
        named = segment.key in played_samples
        if not (named or segment.response_id in in_progress):
            continue
        if segment.truncated_at_ms is not None or not in_conversation(segment.item_id):
            continue
        heard_samples = min(played_samples.get(segment.key, 0), segment.received_samples)
        heard_by_item.setdefault(segment.item_id, []).append((segment, heard_samples))

    plan = InterruptionPlan()
    with_audio = {segment.item_id for segment in segments}
    for item_id, response_id in silent_items:
        if item_id not in with_audio and in_conversation(item_id):
            plan.deletions.append(item_id)
            _note_response(plan, response_id)
    for item_id, heard in heard_by_item.items():
        if all(heard_samples == 0 for _, heard_samples in heard):
            plan.deletions.append(item_id)
            _note_response(plan, heard[0][0].response_id)
            continue
        for segment, heard_samples in heard:
            if segment.done and heard_samples == segment.received_samples:
                continue
            audio_end_ms = samples_to_ms(heard_samples, segment.sample_format)
            plan.truncations.append((item_id, segment.content_index, audio_end_ms))
            _note_response(plan, segment.response_id)
    return plan


def _note_response(plan: InterruptionPlan, response_id: str) -> None:
    if response_id not in plan.response_ids:
        plan.response_ids.append(response_id)


def _check_played(played_samples: Mapping[SegmentKey, int]) -> None:
    for key, count in played_samples.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ConfigurationError(
                f"played_samples[{key!r}]={count!r} is invalid: expected a sample count >= 0 "
                "from the playback clock"
            )
