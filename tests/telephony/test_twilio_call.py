"""End to end, offline: a simulated Twilio call (voxwire.testing's simulator, real loopback
websocket) through the bridge (`PhoneServer`, real loopback websocket) to the local server,
with a tool call and a barge-in, for carrier buffers of 0, 200 ms and 1 s.

What the caller heard is read from the simulated line (the bridge's audio as played, matched
against the agent's speech); every truncate's ``audio_end_ms`` must be at most that and at
least that minus one chunk (plus one 20 ms tick: the simulator's step), the server must accept
it, the clear must drop what was queued, and nothing of the cut item after the cut may reach
the caller, while the next answer is heard from its first sample."""

from __future__ import annotations

import pytest

from .twilio_helpers import CallResult, heard_of, locate, run, simulated_call

CHUNK_MS = 40
TICK = 160


@pytest.mark.parametrize(
    ("carrier_buffer_ms", "chunk_ms", "input_batch_ms"),
    [(0, CHUNK_MS, 20), (200, CHUNK_MS, 40), (1000, CHUNK_MS, 20), (200, 100, 20)],
)
def test_a_barge_in_truncates_at_what_the_caller_heard(
    carrier_buffer_ms: int, chunk_ms: int, input_batch_ms: int
) -> None:
    """Virtual pace: the simulator steps the line and waits for the bridge after each step, so
    the round trip takes no line time: within one chunk (and one 20 ms step)."""
    result = run(simulated_call(carrier_buffer_ms, chunk_ms, input_batch_ms=input_batch_ms))
    check_call(result, carrier_buffer_ms, chunk_ms, slack=TICK)


def test_a_barge_in_at_real_time_pace() -> None:
    """Real time, 200 ms of carrier buffer: the line plays on while marks and the clear travel
    (loopback, a shared machine): within one chunk plus that round trip, allowed 100 ms."""
    result = run(simulated_call(200, CHUNK_MS, realtime=True), timeout_s=120)
    check_call(result, 200, CHUNK_MS, slack=800)


def check_call(result: CallResult, carrier_buffer_ms: int, chunk_ms: int, slack: int) -> None:
    seen, call = result.observed, result.call
    assert not seen.errors, seen.errors
    assert seen.tools == ["lookup_order", "lookup_order"]
    (cut,) = seen.cuts
    assert cut.item_id == seen.items[0]
    # The server accepted the truncation the session sent.
    assert [(t.item_id, t.audio_end_ms) for t in seen.truncated] == [(cut.item_id, cut.played_ms)]

    heard = call.agent_heard
    long_item = result.tap.pcm(cut.item_id)
    sure, most = heard_of(heard, long_item)
    assert cut.played_ms is not None
    truncated_at = cut.played_ms * 8
    print(
        f"buffer {carrier_buffer_ms} ms, chunk {chunk_ms} ms: heard {sure}..{most}: {truncated_at}"
    )
    assert truncated_at <= most  # never ahead of the caller
    assert sure - truncated_at <= chunk_ms * 8 + slack  # within one chunk (and the slack)
    # The cut's truncation error: the claim is the clock's count floored to whole ms, and the
    # clock's bound is one chunk (a mark per chunk), which the caller's real position keeps to
    # (with the slack: what plays while marks and the clear travel).
    (metrics,) = seen.interruptions
    assert metrics.clock_heard_ms is not None
    assert metrics.truncation_error_ms is not None
    assert -1 < metrics.truncation_error_ms <= 0
    assert metrics.clock_bound_ms is not None
    assert 0 <= metrics.clock_bound_ms <= chunk_ms
    assert sure <= (metrics.clock_heard_ms + metrics.clock_bound_ms) * 8 + slack

    # One clear, which dropped what the line still had queued (a carrier buffer at least).
    (clear,) = call.clears
    assert clear.dropped_samples >= carrier_buffer_ms * 8
    # Nothing of the long answer after the cut was heard: what follows it on the line is the
    # short answer, heard in full from its first sample (no audio went out before the clear).
    short_item = result.tap.pcm(seen.items[1])
    # Everything the bridge sent after the clear is the short answer (whole chunks of it), and
    # all of it: no audio of the cut item followed the clear.
    kinds = [kind for kind, _, _ in call.received]
    after_clear = kinds.index("clear") + 1
    sent_after = sum(n for _, _, n in call.received[after_clear:])
    assert sent_after == len(short_item)
    start = locate(heard, short_item)
    # The short answer starts where the caller stopped hearing the long one: at or after the
    # truncation point. (Not after ``sure``: the short answer's first quiet samples can equal
    # the long one's next ones by chance, and did for one cut.)
    assert start >= locate(heard, long_item) + truncated_at
    assert (heard[start : start + len(short_item)] == short_item).all()
    assert not call.bad_messages
    (report,) = result.reports
    assert report.ended_by == "stop"
    assert report.clears_sent == 1
    assert report.cleared_marks_returned >= clear.marks_returned


def test_a_barge_in_before_the_caller_heard_anything_deletes_the_item() -> None:
    """1 s of carrier buffer and the caller talks as soon as the answer reaches the line: no
    mark has come back, so nothing of the item counts as heard — the session deletes it (no
    truncate) and the caller never hears it; the next answer is heard whole."""
    result = run(simulated_call(1000, CHUNK_MS, barge_in_after_samples=0))
    seen, call = result.observed, result.call
    assert not seen.errors, seen.errors
    (cut,) = seen.cuts
    assert cut.item_id == seen.items[0]
    assert cut.played_ms is None  # deleted, not truncated
    assert seen.truncated == []
    (clear,) = call.clears
    assert clear.dropped_samples > 0
    short_item = result.tap.pcm(seen.items[1])
    heard = call.agent_heard
    assert len(heard) == len(short_item)  # the short answer is all the caller heard
    assert (heard == short_item).all()
