"""Local barge-in on real synthesised speech (espeak-ng), with and without the echo gate."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from tests.audio.signals import sine, to_int16
from tests.audio.speech import spoken
from voxwire.audio import AudioInput, BargeInDetector, Resampler
from voxwire.exceptions import ConfigurationError

pytest.importorskip("voxwire.server.engines.tts")


@pytest.fixture(scope="module")
def speech_24k() -> npt.NDArray[np.int16]:
    pcm, rate_hz = spoken("Hello, can you hear me? I have a question.", "alloy")
    return Resampler(rate_hz, 24_000).process(pcm)


def with_silence_before(
    pcm: npt.NDArray[np.int16], ms: int, gain: float = 1.0
) -> npt.NDArray[np.int16]:
    scaled = np.clip(pcm.astype(np.float64) * gain, -32768, 32767).astype(np.int16)
    return np.concatenate([np.zeros(24 * ms, dtype=np.int16), scaled])


def first_voiced_ms(pcm: npt.NDArray[np.int16]) -> float:
    return int(np.flatnonzero(np.abs(pcm) > 500)[0]) / 24


def test_speech_start_is_reported_once_near_where_it_begins(
    speech_24k: npt.NDArray[np.int16],
) -> None:
    calls: list[int] = []
    detector = BargeInDetector(24_000, on_speech_started=lambda: calls.append(1))
    audio = with_silence_before(speech_24k, 600)
    pipeline = AudioInput(24_000, barge_in=detector)
    pipeline.process(audio)
    assert detector.triggers == len(calls) == 1
    assert detector.last_start_ms is not None
    assert abs(detector.last_start_ms - first_voiced_ms(audio)) <= 100


def test_echo_gate_ignores_quiet_echo_while_the_agent_speaks(
    speech_24k: npt.NDArray[np.int16],
) -> None:
    echo = with_silence_before(speech_24k, 200, gain=0.05)  # the agent's voice ~26 dB down
    gated = BargeInDetector(24_000, echo_gate_dbfs=-35.0)
    gated.agent_speaking = True
    gated.process(echo)
    assert gated.triggers == 0
    assert gated.gated_frames > 10
    ungated = BargeInDetector(24_000)  # the same audio while the agent is silent: speech
    ungated.process(echo)
    # Speech (once or twice: the pause after "hear me?" may end the first onset).
    assert ungated.triggers >= 1


def test_loud_user_speech_passes_the_gate_later(speech_24k: npt.NDArray[np.int16]) -> None:
    audio = with_silence_before(speech_24k, 300)
    quiet_agent = BargeInDetector(24_000)
    speaking_agent = BargeInDetector(24_000, echo_gate_dbfs=-35.0, echo_min_speech_ms=300)
    speaking_agent.agent_speaking = True
    starts = []
    for detector in (quiet_agent, speaking_agent):
        for start in range(0, len(audio), 480):
            if detector.process(audio[start : start + 480]):
                starts.append(start / 24)
                break
    assert len(starts) == 2
    assert starts[1] - starts[0] >= 150  # the stricter rule costs latency


def test_tones_and_silence_do_not_trigger_and_g711_rate_works() -> None:
    detector = BargeInDetector(8_000)
    pipeline = AudioInput(8_000, format="audio/pcmu", barge_in=detector)
    pipeline.process(np.zeros(8000, dtype=np.int16))
    pipeline.process(to_int16(sine(50, 8_000, 8_000, 300)))
    assert detector.triggers == 0


def test_bad_detector_parameters() -> None:
    with pytest.raises(ConfigurationError, match="aggressiveness=4 is invalid"):
        BargeInDetector(aggressiveness=4)
    with pytest.raises(ConfigurationError, match="echo_gate_dbfs=3 is invalid"):
        BargeInDetector(echo_gate_dbfs=3)
    with pytest.raises(ConfigurationError, match="min_speech_ms=0 is invalid"):
        BargeInDetector(min_speech_ms=0)
