"""``one_device``: whether a microphone hears a speaker because they are one device's — what
``voxwire talk`` turns echo cancellation on by default for. Device names as PortAudio lists them
on macOS (CoreAudio), Linux (ALSA) and Windows (MME/WASAPI)."""

from __future__ import annotations

import pytest

from voxwire.audio import one_device

ONE = [
    # (input index, input name, output index, output name)
    (0, "MacBook Pro Microphone", 1, "MacBook Pro Speakers"),
    (2, "HDA Intel PCH: ALC257 Analog (hw:0,0)", 2, "HDA Intel PCH: ALC257 Analog (hw:0,0)"),
    (2, "HDA Intel PCH: ALC257 Analog (hw:0,0)", 3, "HDA Intel PCH: HDMI 0 (hw:0,3)"),
    (4, "Jabra SPEAK 510 USB: Audio (hw:2,0)", 4, "Jabra SPEAK 510 USB: Audio (hw:2,0)"),
    (1, "Microphone Array (Realtek(R) Audio)", 5, "Speakers (Realtek(R) Audio)"),
    (7, "default", 7, "default"),
    (9, "pulse", 9, "pulse"),
]

SEPARATE = [
    (2, "Blue Yeti: USB Audio (hw:2,0)", 0, "HDA Intel PCH: ALC257 Analog (hw:0,0)"),
    (1, "Microphone (USB Audio Device)", 5, "Speakers (Realtek(R) Audio)"),
    (3, "Logitech USB Headset: Audio (hw:1,0)", 3, "Logitech USB Headset: Audio (hw:1,0)"),
    (0, "Jane's AirPods Pro", 1, "Jane's AirPods Pro"),
    (0, "Headset Microphone (Jabra Evolve 65)", 2, "Headphones (Jabra Evolve 65)"),
    (1, "Microphone", 2, "Speakers"),  # nothing names the hardware: cannot tell
]


@pytest.mark.parametrize("case", ONE, ids=lambda c: f"{c[1]}|{c[3]}")
def test_one_devices_microphone_and_speaker(case: tuple[int, str, int, str]) -> None:
    assert one_device(*case)


@pytest.mark.parametrize("case", SEPARATE, ids=lambda c: f"{c[1]}|{c[3]}")
def test_separate_or_worn_devices(case: tuple[int, str, int, str]) -> None:
    assert not one_device(*case)
