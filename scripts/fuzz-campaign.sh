#!/usr/bin/env bash
# The local fuzz campaign: the bounded suites of tests/fuzz run with large counts and many
# seeds (docs/protocol.md, "Fuzz", records the figures of a run). Not part of CI: about 25 min
# on a 2-core machine. Each suite prints its case counts ("fuzz cases") at the end of its run.
set -euo pipefail
cd "$(dirname "$0")/.."
run() { python -m pytest -q -p no:cacheprovider "$@" 2>&1 | sed -n '/fuzz cases/,$p'; }
for seed in 1 2 3 4 5; do VOXWIRE_FUZZ_SEED=$seed run tests/fuzz/test_core_fuzz.py; done
VOXWIRE_FUZZ_SEMANTIC_CORE=100000 run tests/fuzz/test_semantic_fuzz.py -k core
VOXWIRE_FUZZ_HTTP_CORE=100000 run tests/fuzz/test_http_fuzz.py -k cores
VOXWIRE_FUZZ_HTTP=2000 run tests/fuzz/test_http_fuzz.py -k listener
VOXWIRE_FUZZ_OFFICIAL=10000 run tests/fuzz/test_official_clients.py
for seed in $(seq 1 30); do VOXWIRE_FUZZ_SEED=$seed run tests/fuzz/test_server_fuzz.py; done
for seed in $(seq 1 15); do VOXWIRE_FUZZ_SEED=$seed run tests/fuzz/test_session_fuzz.py; done
VOXWIRE_FUZZ_SEMANTIC_ROUNDS=150 run tests/fuzz/test_semantic_fuzz.py -k agent_session
