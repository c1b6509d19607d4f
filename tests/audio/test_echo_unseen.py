"""The echo canceller on a seeded slice of the unseen-room evaluation (benches/aec_eval): rooms,
loudspeakers and voices drawn from the TEST seeds, which neither the canceller's constants nor
the bench's held-out figures use.

The slice: a distorting speaker (-10 dB) in a small room whose latency is under-reported by
10 ms, the user saying "Stop." in the middle of the turn; another -10 dB speaker, 17 ms late, its
clock drifting by 42 ppm, the user talking over the end; a linear speaker 48 ms late (beyond the
20 ms margin, inside the 300 ms tail) with the user talking from 1.35 s; a -16 dB speaker whose
echo comes 4.5 ms early (within the margin), the user over the end. Thresholds sit a little
under what the canceller measures here (benches/RESULTS.md, "Echo cancellation over unseen
rooms") and far above the raw microphone and the canceller before issue 31 (16-22 dB, speech
heard in 4-16 % of the echo's frames, 1-3 false barge-ins per scene), so a regression in
reduction, in the speech the barge-in detector would hear in the echo, or in the user kept
through double talk fails. A user talking in the first two seconds is not kept better than the
raw microphone (STOI 0.65 against 0.70): that floor only guards against losing more.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyroomacoustics")
pytest.importorskip("pystoi")
pytest.importorskip("voxwire.server.engines.tts")

from benches.aec_eval.generator import SEEDS, generate
from benches.aec_eval.metrics import measure
from benches.aec_eval.run import raw, voxwire

DISTORTING, LATE, EARLY_TALK, EARLY_ECHO = 90014, 90052, 90003, 90021
SLICE = (DISTORTING, LATE, EARLY_TALK, EARLY_ECHO)


@cache
def figures(seed: int, which: str = "voxwire") -> dict[str, Any]:
    s = generate(seed)
    run = raw if which == "raw" else voxwire()
    return measure(s, run(s)[0])


def test_the_slice_is_what_it_says() -> None:
    assert all(seed in SEEDS["test"] for seed in SLICE)
    meta = {seed: generate(seed).meta for seed in SLICE}
    assert meta[DISTORTING]["speaker"] == "distort10"
    assert meta[LATE]["latency_error_ms"] > 15
    assert meta[LATE]["drift_ppm"] != 0
    assert meta[EARLY_TALK]["double_talk"] == "start"
    assert meta[EARLY_TALK]["latency_error_ms"] > 40
    assert meta[EARLY_ECHO]["latency_error_ms"] < 0


@pytest.mark.parametrize("seed", SLICE)
def test_echo_is_reduced_in_unseen_rooms(seed: int) -> None:
    assert figures(seed)["erle_db"] >= 23.0
    assert abs(figures(seed, "raw")["erle_db"]) < 1.0  # the measure can fail


def test_reduction_over_the_slice() -> None:
    assert float(np.mean([figures(seed)["erle_db"] for seed in SLICE])) >= 28.0


@pytest.mark.parametrize("seed", SLICE)
def test_little_of_the_echo_sounds_like_speech(seed: int) -> None:
    assert figures(seed)["speech_frames"] <= 0.03
    assert figures(seed, "raw")["speech_frames"] > 0.5


@pytest.mark.parametrize("seed", SLICE)
def test_no_false_barge_in_from_the_echo(seed: int) -> None:
    assert figures(seed)["false_barge_ins"] == 0
    assert figures(seed, "raw")["false_barge_ins"] > 0


@pytest.mark.parametrize("seed", [LATE, EARLY_ECHO])
def test_the_user_is_kept_through_double_talk(seed: int) -> None:
    assert figures(seed)["stoi"] >= figures(seed, "raw")["stoi"] + 0.03


def test_a_user_in_the_first_seconds_loses_no_more_than_today() -> None:
    assert figures(EARLY_TALK)["stoi"] >= 0.62
