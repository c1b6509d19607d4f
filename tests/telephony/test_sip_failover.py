"""A SIP call survives the death of its worker: two worker processes on one PostgreSQL store,
the local server's SIP trunk as the carrier, the owner SIGKILLed mid-tool-call and mid-answer
(tests/telephony/failover_run.py), or sent SIGTERM mid-answer (it drains: hands the call
over). The other worker takes the call within seconds, the caller hears the agent again, the
tool ran once, the stored conversation has no duplicate and follows the call's own (server)
conversation."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.store.conftest import pg_cluster  # noqa: F401 - the throwaway PostgreSQL cluster
from tests.telephony.failover_run import Mode, run_failover


@pytest.mark.parametrize("mode", ["tool", "answer", "drain"])
def test_the_call_goes_on_when_its_worker_is_killed(
    pg_cluster: str,  # noqa: F811
    tmp_path: Path,
    mode: Mode,
) -> None:
    outcome = asyncio.run(run_failover(pg_cluster, tmp_path, mode))
    # Taken over within seconds: the owner was a process of this host, its lease freed at once.
    assert outcome.took_over_s < 10, outcome
    # The caller hears the agent after the kill: the answer goes on.
    assert outcome.heard_after_s > 1.0, outcome
    # The tool ran once: the owner started it; the worker taking over did not run it again.
    assert len(outcome.tool_runs) == 1, outcome.tool_runs
    # The stored conversation: no duplicate, in the call's order, every item of the call.
    assert len(set(outcome.stored_ids)) == len(outcome.stored_ids), outcome.stored_ids
    assert outcome.stored_ids == outcome.server_ids, outcome


# The fuzz of the kill point: the owner killed after each of its session's events (deltas not
# counted) — before, during and after the tool, the answer, their records. Slow (a call each):
# VOXWIRE_FAILOVER_FUZZ=1 runs it; a call has 33 such events before the hang-up. It fails today
# at 15 of the 33 points: the limits docs/telephony.md names (benches/RESULTS.md has the map).
FUZZ_POINTS = range(1, 34) if os.environ.get("VOXWIRE_FAILOVER_FUZZ") else range(0)


@pytest.mark.parametrize("kill_after", FUZZ_POINTS)
def test_the_call_goes_on_whatever_event_the_worker_dies_after(
    pg_cluster: str,  # noqa: F811
    tmp_path: Path,
    kill_after: int,
) -> None:
    outcome = asyncio.run(run_failover(pg_cluster, tmp_path, "event", kill_after=kill_after))
    assert outcome.took_over_s < 10, outcome
    assert len(outcome.tool_runs) == 1, outcome.tool_runs
    assert len(set(outcome.stored_ids)) == len(outcome.stored_ids), outcome.stored_ids
    assert outcome.stored_ids == outcome.server_ids, outcome
