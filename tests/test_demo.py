"""`voxwire demo`, run for real as the README's first command: the local server in-process,
the user's lines synthesised with its voice, a tool, a handoff and a barge-in. The truncation
the session sent must equal what the virtual speaker played of the item, floored to ms, and the
WAV it wrote must show it: speech up to the cut, then the device buffer and the fade, then
silence while the user speaks."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from voxwire.audio import read_wav
from voxwire.demo import SPEAKER_LATENCY_MS
from voxwire.demo.script import SCENARIO

RATE_HZ = 24_000
LATENCY = int(SPEAKER_LATENCY_MS) * RATE_HZ // 1000
FADE = 96  # 4 ms, the output's default fade


def demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "voxwire.cli", "demo", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def records(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]  # every line is JSON


def assert_cut_is_what_was_heard(wav: Path, first: int, cut: int) -> None:
    """In the recording: the item's speech from its first heard sample to the cut; then the
    device buffer plays out (the latency), the fade runs, and a second of silence follows (the
    user is speaking)."""
    pcm = read_wav(wav).pcm.astype(np.int32)
    assert np.abs(pcm[first : first + RATE_HZ // 2]).max() > 1000
    assert np.abs(pcm[cut - RATE_HZ // 2 : cut]).max() > 1000
    quiet_from = cut + LATENCY + FADE
    assert not pcm[quiet_from : quiet_from + RATE_HZ].any()


def test_demo_json_tool_handoff_and_an_exact_barge_in(tmp_path: Path) -> None:
    out = tmp_path / "demo.wav"
    p = demo("--out", str(out), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    events = records(p.stdout)
    kinds = [e["type"] for e in events]
    (tool,) = [e for e in events if e["type"] == "tool_end"]
    assert tool["name"] == "lookup_order"
    assert '"status":"shipped on Monday"' in tool["output"]
    (cut_reply,) = [e for e in events if "not_heard" in e]
    assert cut_reply["type"] == "assistant_transcript_done"
    assert cut_reply["transcript"] == f"{cut_reply['heard']} {cut_reply['not_heard']}"
    assert cut_reply["heard"].startswith("Billing desk here.")
    (handoff,) = [e for e in events if e["type"] == "handoff"]
    assert (handoff["from_agent"], handoff["to_agent"]) == ("Concierge", "Billing")
    assert kinds.index("tool_end") < kinds.index("handoff") < kinds.index("audio_interrupted")
    (cut,) = [e for e in events if e["type"] == "audio_interrupted"]
    check = cut["check"]
    heard = check["speaker_cut_sample"] - check["speaker_first_sample"]
    assert heard == check["heard_samples"] > RATE_HZ  # more than a second of it was heard
    assert cut["played_ms"] == heard * 1000 // RATE_HZ
    assert check["equals_audio_end_ms"] is True
    (summary,) = [e for e in events if e["type"] == "summary"]
    assert summary["ok"] is True
    assert summary["errors"] == []
    assert summary["truncates_unanswered"] == 0
    assert [c["audio_end_ms"] for c in summary["cuts"]] == [cut["played_ms"]]
    assert summary["cuts"][0]["dropped_unplayed_ms"] > 0
    # The truncation error: the claim against what the playback clock knew (the virtual
    # speaker's, exact: what it played), floored to whole ms; a local device claims no bound.
    summary_cut = summary["cuts"][0]
    assert summary_cut["clock_ms"] == pytest.approx(heard * 1000 / RATE_HZ)
    assert -1 < summary_cut["error_ms"] <= 0
    assert summary_cut["error_ms"] == pytest.approx(cut["played_ms"] - summary_cut["clock_ms"])
    assert summary_cut["bound_ms"] is None
    assert len(summary["items"]) == 3  # concierge, billing (cut), billing's answer
    recording = read_wav(out)
    assert recording.rate_hz == RATE_HZ
    assert len(recording.pcm) == round(summary["audio_s"] * RATE_HZ)
    assert 15 * RATE_HZ < len(recording.pcm) < 40 * RATE_HZ
    assert_cut_is_what_was_heard(out, check["speaker_first_sample"], check["speaker_cut_sample"])


CUT_LINE = re.compile(
    r"cut\s+interrupted: (\S+) truncated at audio_end_ms=(\d+) .*"
    r"speaker played (\d+) samples of it, (\d+)\.\.(\d+) of its output"
)


def test_demo_transcript_is_in_time_order_with_a_plain_cut_line(tmp_path: Path) -> None:
    """An agent line is stamped with when its speech started, not when its transcript was
    complete: billing's reply (heard from about 12 s) used to show at 15.3 s, after the user's
    15.1 s line that cut it. Lines come in time order. The cut's check reads as a sentence;
    its sample positions are for --verbose."""
    p = demo("--out", str(tmp_path / "demo.wav"))
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    stamps = [float(line.split("s  ", 1)[0]) for line in lines]
    assert stamps == sorted(stamps), p.stdout
    billing = next(i for i, line in enumerate(lines) if 'agent:Billing "Billing desk' in line)
    cutting = next(i for i, line in enumerate(lines) if 'says "Sorry, how long' in line)
    assert billing < cutting
    # Billing began after the concierge's 6.5 s reply, seconds before the user cut it.
    assert stamps[cutting] - stamps[billing] > 2.0, p.stdout
    (cut,) = [line for line in lines if "  cut  " in line]
    assert "checked: the speaker played exactly" in cut
    assert "samples" not in cut
    assert ".." not in cut


def test_demo_prints_a_readable_transcript(tmp_path: Path) -> None:
    out = tmp_path / "demo.wav"
    p = demo("--out", str(out), "--verbose")
    assert p.returncode == 0, p.stdout + p.stderr
    text = p.stdout
    assert 'user      says "Hi! My order forty two' in text
    assert "tool      lookup_order(" in text
    assert "handoff   Concierge -> Billing" in text
    assert 'agent:Billing "Billing desk here.' in text
    # The cut reply: what was heard, then what was not (marked) — or, when its transcript was
    # complete before the cut (a loaded machine), in full and then what was heard of it on the
    # cut's metrics line; no temporary file names.
    marked = [line for line in text.splitlines() if "[not heard: " in line]
    later = [line for line in text.splitlines() if '; heard about: "Billing desk here.' in line]
    assert len(marked) + len(later) == 1, text
    if marked:
        assert 'agent:Billing "Billing desk here.' in marked[0]
    assert "user-1.wav" not in text
    (match,) = CUT_LINE.findall(text)
    _, audio_end_ms, heard, first, cut = match
    assert int(heard) == int(cut) - int(first)
    assert int(audio_end_ms) == int(heard) * 1000 // RATE_HZ
    assert "= audio_end_ms)" in text
    assert "MISMATCH" not in text
    assert "underruns 0" in text
    assert f"cut {match[0]}: audio_end_ms={audio_end_ms}" in text  # in the summary too
    assert "ms against the playback clock" in text
    assert_cut_is_what_was_heard(out, int(first), int(cut))


def demo_against(pacing: Any, out: Path) -> tuple[int, str, str]:
    """``voxwire demo --json --url`` against a local server this test runs with ``pacing`` (as
    `voxwire serve --scenario demo` would); (status, stdout, stderr)."""
    from voxwire.server import RealtimeServer

    async def run() -> tuple[int, str, str]:
        async with RealtimeServer(scenario=SCENARIO, pacing=pacing) as server:
            child = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "voxwire.cli", "demo", "--json", "--out", str(out)),
                *("--url", server.url("gpt-realtime")),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            stdout, stderr = await asyncio.wait_for(child.communicate(), 120)
            assert child.returncode is not None
            assert len(server.connections) == 0  # the demo's connection came and went
            return child.returncode, stdout.decode(), stderr.decode()

    return asyncio.run(run())


def test_demo_against_an_external_endpoint(tmp_path: Path) -> None:
    """--url: the same conversation against a server this test runs (as `voxwire serve
    --scenario` would), not one started in-process."""
    from voxwire.server import Pacing

    pacing = Pacing(audio_pace=0, text_tokens_per_s=0)
    code, stdout, stderr = demo_against(pacing, tmp_path / "demo.wav")
    assert code == 0, stdout + stderr
    events = records(stdout)
    assert events[0]["url"].startswith("ws://127.0.0.1:")
    (cut,) = [e for e in events if e["type"] == "audio_interrupted"]
    assert cut["check"]["equals_audio_end_ms"] is True
    assert next(e for e in events if e["type"] == "summary")["ok"] is True


def test_demo_against_a_server_paced_as_voxwire_serve_is(tmp_path: Path) -> None:
    """`voxwire serve --scenario demo` streams at 4x real time (its default --pace), slower than
    the demo's virtual clock: the speaker used to outrun billing's reply while the user spoke
    (a 2,700 ms underrun), so the cut dropped nothing and the check printed "speaker played
    None samples (not checked)". The clock waits for audio still streaming: no underrun, and
    the cut is checked and exact."""
    from voxwire.cli import build_parser
    from voxwire.server import Pacing

    serve = build_parser().parse_args(["serve", "--scenario", "demo"])
    pacing = Pacing(audio_pace=serve.pace, text_tokens_per_s=serve.text_rate)
    code, stdout, stderr = demo_against(pacing, tmp_path / "demo.wav")
    assert code == 0, stdout + stderr
    events = records(stdout)
    (cut,) = [e for e in events if e["type"] == "audio_interrupted"]
    assert cut["check"]["equals_audio_end_ms"] is True
    summary = next(e for e in events if e["type"] == "summary")
    assert [c["speaker_samples"] is not None for c in summary["cuts"]] == [True]
    assert summary["underruns"] == 0
    assert summary["ok"] is True


def test_demo_reports_an_endpoint_that_does_not_answer(tmp_path: Path) -> None:
    p = demo("--out", str(tmp_path / "x.wav"), "--url", "ws://127.0.0.1:9/v1/realtime")
    assert p.returncode == 2
    assert "127.0.0.1:9" in p.stderr
