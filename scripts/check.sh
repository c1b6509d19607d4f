#!/usr/bin/env bash
# The project's whole test suite, as CI runs it (README: "Run the tests").
# Assumes the package and its dev/bench extras are installed (see .ci/run or README).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test"
cargo test --workspace --release

step "ruff"
ruff check python tests benches examples
ruff format --check python tests benches examples

step "mypy --strict"
mypy --strict python/voxwire

step "stubs match the extension (mypy.stubtest)"
python -m mypy.stubtest voxwire._core

step "pytest"
# Exit code 5 means "no tests collected": a broken collection must not pass as success.
set +e
python -m pytest tests benches --benchmark-disable -q
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "pytest collected no tests: failing" >&2
    exit 1
fi
[ "$rc" -eq 0 ] || exit "$rc"

step "protocol/ line coverage by its own tests: 100 %"
python -m pytest tests/protocol -q --cov=voxwire.protocol --cov-report=term-missing:skip-covered --cov-fail-under=100

if [ "${VOXWIRE_SKIP_WHEEL:-0}" != "1" ]; then
    step "abi3 wheel installs into a clean venv and works"
    scripts/wheel-smoke.sh
fi

echo
echo "all checks passed"
