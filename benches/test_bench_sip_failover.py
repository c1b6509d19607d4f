"""SIP failover, end to end (issue 33): a call through two worker processes on one PostgreSQL
store, the owner SIGKILLed mid-tool-call and mid-answer (and sent SIGTERM mid-answer: a drain),
``RUNS`` times each
(tests/telephony/failover_run.py: the local server's SIP trunk as the carrier, real-time audio,
a throwaway PostgreSQL cluster as in tests/store).

    VOXWIRE_FAILOVER_RUNS=20 pytest benches/test_bench_sip_failover.py -q -s

Per run: the time from the kill to the other worker's takeover; the caller's gap — the longest
silence of the agent at the phone from the kill until the answer is over (the kill to the first
agent audio after it, or between two parts of the answer, which streams 100 ms a part in real
time); the tool's runs (exactly one) and the stored conversation against the call's own (no
duplicate, no gap). Prints the medians and the worst; every run must pass the checks.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package (fixtures)

from tests.store.conftest import pg_cluster  # noqa: F401
from tests.telephony.failover_run import Mode, Outcome, run_failover

RUNS = int(os.environ.get("VOXWIRE_FAILOVER_RUNS", "3"))


def _checked(outcome: Outcome) -> Outcome:
    assert len(outcome.tool_runs) == 1, outcome
    assert outcome.heard_after_s > 1.0, outcome
    assert len(set(outcome.stored_ids)) == len(outcome.stored_ids), outcome
    assert outcome.stored_ids == outcome.server_ids, outcome
    return outcome


@pytest.mark.parametrize("mode", ["tool", "answer", "drain"])
def test_failover_figures(pg_cluster: str, tmp_path: Path, mode: Mode) -> None:  # noqa: F811
    outcomes = []
    for run in range(RUNS):
        workdir = tmp_path / f"run{run}"
        workdir.mkdir()
        outcomes.append(_checked(asyncio.run(run_failover(pg_cluster, workdir, mode))))
    takeover = [o.took_over_s for o in outcomes]
    gaps = [o.gap_s for o in outcomes]
    print(f"\n{mode} takeover s: {' '.join(f'{t:.3f}' for t in takeover)}")
    print(f"{mode} gap s: {' '.join(f'{g:.3f}' for g in gaps)}")
    print(
        f"killed mid-{mode}, {RUNS} runs, all continued, tool ran once each, store == call: "
        f"takeover median {statistics.median(takeover):.3f} s, worst {max(takeover):.3f} s; "
        f"caller gap median {statistics.median(gaps):.3f} s, worst {max(gaps):.3f} s"
    )
