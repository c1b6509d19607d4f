"""Smoke test of the session CPU benchmark (benches/session_cpu.py), so that it cannot rot.

A 20-second script (a spoken turn, an interruption, a typed question answered through a function
tool) driven by each client once. It checks that both completed their turns — not how fast:
the timings are the benchmark's business (benches/RESULTS.md). openai-agents is in the
``bench`` extra; without it only voxwire runs.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

import session_cpu  # benches/ is on the path: pytest puts a test file's folder there


def test_both_clients_complete_the_scripted_conversation() -> None:
    clients = ("voxwire", "openai-agents") if importlib.util.find_spec("agents") else ("voxwire",)
    results = session_cpu.compare(0, 1, clients, sys.executable, short=True)
    for impl in clients:
        (run,) = results[impl]
        assert run.errors == [], (impl, run.errors)
        # Two spoken answers (the first one cut) and the tool's answer; the tool ran once.
        assert run.responses >= 3, (impl, run)
        assert run.tool_calls == 1, (impl, run)
        assert run.interruptions >= 1, (impl, run)
        assert run.latency_ms, impl  # audio reached the application, matched to the tap
        assert run.cpu_s_per_min > 0
    if "openai-agents" not in clients:
        pytest.skip("openai-agents is not installed (pip install '.[bench]'): voxwire only")


def test_the_replay_mode_runs_every_client_on_the_recorded_conversation() -> None:
    """``--replay``: the conversation recorded once at real time, then replayed at full speed to
    each client (and to the system-calls floor, which reads the same frames unparsed)."""
    sdks = ("voxwire", "openai-agents") if importlib.util.find_spec("agents") else ("voxwire",)
    clients = (*sdks, session_cpu.FLOOR, session_cpu.SYSCALLS)
    results = session_cpu.compare(0, 1, clients, sys.executable, short=True, replay=True)
    for impl in (*sdks, session_cpu.FLOOR):
        (run,) = results[impl]
        assert run.errors == [], (impl, run.errors)
        # The recording holds the spoken answers and the tool's answer; each stack ran the tool.
        assert run.responses >= 3, (impl, run)
        assert run.tool_calls == 1, (impl, run)
        assert run.latency_ms == []  # no tap behind a replay
    (floor,) = results[session_cpu.SYSCALLS]
    assert floor.responses == 0
    assert floor.cpu_s_per_min > 0
