#!/usr/bin/env bash
# Build the release abi3 wheel, install it into a fresh venv (no Rust, no build step), smoke it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
maturin build --release --out "$out/dist" >/dev/null
wheel=$(ls "$out"/dist/voxwire-*.whl)
case "$wheel" in
    *-abi3-*) ;;
    *) echo "expected an abi3 wheel, got $wheel" >&2; exit 1 ;;
esac
python -m venv "$out/venv"
"$out/venv/bin/pip" install -q "$wheel"
# Run from an empty directory so the source tree cannot be imported by accident.
cd "$out"
"$out/venv/bin/python" - <<'PY'
import numpy as np
import voxwire
from voxwire.audio import Resampler

assert "site-packages" in voxwire.__file__, voxwire.__file__
r = Resampler(48000, 24000)
x = (np.sin(np.arange(960) * 0.1) * 10000).astype(np.int16)
y = r.process(x)
assert y.dtype == np.int16 and len(y) == 480, (y.dtype, len(y))
print("wheel OK:", voxwire.__version__, len(y), "samples")
PY
echo "installed $(basename "$wheel") into a clean venv"
