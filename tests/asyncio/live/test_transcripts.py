"""HeardClock and TranscriptRelease: the heard ring position back to the session timeline."""

from __future__ import annotations

from voxwire.asyncio.live.audio.transcripts import HeardClock, TranscriptRelease


def test_heard_position_interpolates_within_a_delta_and_never_goes_back() -> None:
    clock = HeardClock()
    clock.pushed(0, 2400, 1000, 1100)  # 100 ms at 24 kHz for timeline 1000..1100
    clock.pushed(2400, 2400, 1100, 1100)  # an empty delta is ignored
    clock.pushed(2400, 4800, 5000, 5100)  # the next utterance, after a pause
    assert clock.heard_ms(0) == 0
    assert clock.heard_ms(1200) == 1050
    assert clock.heard_ms(2400) == 1100
    assert clock.heard_ms(3600) == 5050
    assert clock.heard_ms(100) == 5050  # never back
    clock.dropped()
    assert clock.heard_ms(10_000) == 5050


def test_deltas_are_released_when_their_start_is_heard() -> None:
    release = TranscriptRelease()
    release.hold("It ", 1000, 1040)
    release.hold("is ", 1040, 1080)
    release.hold("late.", 1080, 1200)
    assert release.due(999) == []
    assert [d.delta for d in release.due(1050)] == ["It ", "is "]
    assert len(release) == 1
    assert [d.delta for d in release.drop()] == ["late."]
    assert release.due(10_000) == []
