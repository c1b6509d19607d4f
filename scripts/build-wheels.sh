#!/usr/bin/env bash
# Release wheels for devices: abi3 (CPython >= 3.10) manylinux_2_17 wheels for x86_64 and aarch64
# Linux, plus the sdist, written to OUTDIR. Cross-compiles from any x86-64 Linux with nothing but
# the package registries: the Rust targets come from rustup, the linker is zig from PyPI's
# `ziglang` (maturin --zig links against glibc 2.17's symbol versions, so the wheel is
# manylinux2014 whatever the build machine's glibc). Every wheel is checked with
# `auditwheel show`: the platform tag it claims must be the one auditwheel finds it consistent
# with, and it must need no external shared library. Prints the list at the end.
#
#   pip install ".[wheels]"          # maturin, ziglang, auditwheel
#   scripts/build-wheels.sh dist/
#
# WHEEL_TARGETS="x86_64 aarch64" (the default) picks the architectures; armv7 is not built (see
# docs/devices.md "Devices": no CPython test environment for it without compiling numpy, msgspec and
# webrtcvad from source under emulation).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
mkdir -p "$1"
out=$(cd "$1" && pwd)
targets=${WHEEL_TARGETS:-x86_64 aarch64}
# manylinux2014 = manylinux_2_17: glibc 2.17, what pydantic-core and orjson ship. Rust's std
# needs nothing newer.
compat=manylinux2014
policy_tag=manylinux_2_17

for tool in maturin auditwheel; do
    if ! command -v "$tool" >/dev/null; then
        echo "error: $tool not found; install the build tools with: pip install \".[wheels]\"" >&2
        exit 1
    fi
done
if ! python -c "import ziglang" 2>/dev/null; then
    echo "error: the zig linker (PyPI ziglang) is missing; pip install \".[wheels]\"" >&2
    exit 1
fi

rm -f "$out"/voxwire-*.whl "$out"/voxwire-*.tar.gz
echo "== sdist"
maturin sdist --out "$out"

failed=0
for arch in $targets; do
    triple="$arch-unknown-linux-gnu"
    echo "== $arch wheel ($compat, abi3)"
    if ! rustup target list --installed | grep -qx "$triple"; then
        rustup target add "$triple"
    fi
    maturin build --release --zig --compatibility "$compat" --target "$triple" --out "$out"
    wheel=$(ls "$out"/voxwire-*-abi3-*"$arch".whl)
    auditwheel show "$wheel"
    # The tag the wheel claims is the tag auditwheel finds it consistent with, and it needs no
    # shared library beyond the manylinux base set (external_libs is empty).
    claimed="${policy_tag}_$arch"
    if ! auditwheel show --json "$wheel" | python -c '
import json, sys
claimed, name = sys.argv[1], sys.argv[2]
r = json.load(sys.stdin)
tag, libs = r["overall_tag"], sorted(r["external_libs"])
ok = True
if claimed not in name:
    print(f"FAIL: {name} does not claim {claimed}"); ok = False
if tag != claimed:
    print(f"FAIL: auditwheel finds {name} consistent with {tag}, not {claimed}"); ok = False
if libs:
    print(f"FAIL: {name} needs external libraries: {libs}"); ok = False
if ok:
    print(f"OK: {name} is {claimed}, no external libraries")
sys.exit(0 if ok else 1)
' "$claimed" "$(basename "$wheel")"; then
        failed=1
    fi
done

echo
echo "== built in $out"
(cd "$out" && for f in voxwire-*; do
    printf '%10d  %s  %s\n' "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -c1-16)" "$f"
done)
if [ "$failed" -ne 0 ]; then
    echo "auditwheel check failed" >&2
    exit 1
fi
echo "auditwheel: every wheel is $policy_tag with no external libraries"
