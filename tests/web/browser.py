"""Headless Chromium for the web tests: found on the machine (Debian's ``chromium``, which
.ci/run installs) and driven by Playwright's Python package pointed at it (no browser download).
``browser_or_skip()`` says why the tests skip when either is missing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from voxwire.audio import write_wav

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str | None:
    explicit = os.environ.get("VOXWIRE_CHROMIUM")
    if explicit:
        return explicit
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def browser_or_skip() -> str:
    """The Chromium executable, or skip saying what is missing."""
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        pytest.skip("no browser automation: pip install playwright (the dev extra has it)")
    path = chromium_path()
    if path is None:
        pytest.skip(
            "no Chromium on this machine: apt-get install chromium (or set VOXWIRE_CHROMIUM)"
        )
    return path


def launch_args(fake_microphone: Path | None = None) -> list[str]:
    args = [
        "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
        "--disable-dev-shm-usage",  # containers' small /dev/shm
        "--autoplay-policy=no-user-gesture-required",
        "--use-fake-ui-for-media-stream",
    ]
    if fake_microphone is not None:
        args += [
            "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-audio-capture={fake_microphone}%noloop",
        ]
    return args


def fake_microphone(path: Path, parts: list[tuple[float, np.ndarray | None]], rate_hz: int) -> Path:
    """A WAV for Chromium's fake microphone: each part placed at its start time (seconds),
    silence in between and 30 s of it after the last."""
    end = max(at + (0 if pcm is None else len(pcm) / rate_hz) for at, pcm in parts) + 30
    out = np.zeros(round(end * rate_hz), dtype=np.int16)
    for at, pcm in parts:
        if pcm is not None:
            start = round(at * rate_hz)
            out[start : start + len(pcm)] = pcm
    write_wav(path, out, rate_hz)
    return path
