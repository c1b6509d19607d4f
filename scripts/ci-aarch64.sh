#!/usr/bin/env bash
# aarch64 under emulation, on an x86-64 Debian machine as root (CI: .ci/run calls this).
#
#  1. The device wheels: scripts/build-wheels.sh (sdist, x86_64 and aarch64 manylinux_2_17,
#     each checked with auditwheel).
#  2. The Rust core's tests cross-compiled for aarch64 (Debian's gcc-aarch64-linux-gnu links
#     them) and run under qemu-user (Debian's qemu-user-static).
#  3. The aarch64 wheel installed into a real aarch64 CPython: an arm64 Debian 12 root made
#     with debootstrap, entered with chroot through qemu's binfmt_misc entry; numpy and the
#     other dependencies are PyPI's aarch64 wheels. It runs the audio tests that reach every
#     entry point of the extension (Resampler, to_mono, resampler_kernel, G.711, PcmRing,
#     PlaybackClock, ItemPlayback, and AudioInput / AudioOutput above them), then `voxwire demo`
#     end to end (tests/test_demo.py's JSON test) and prints `voxwire info`.
#
# Nothing is cached: the root is built and removed each run. The wheels (step 1) are built and
# auditwheel-checked in every run; steps 2 and 3 need root, apt-get and binfmt_misc on an x86-64
# host, and only they are skipped, saying why, where one of those is missing (e.g. an
# unprivileged container): the run then ends with status 0 after the wheels.
#   VOXWIRE_ARM64_ROOT=/path  reuse (or create and keep) the arm64 root there, for local runs.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

t0=$(date +%s)
step() { printf '\n== [aarch64 %ss] %s\n' "$(($(date +%s) - t0))" "$*"; }
why_not="" # why the emulated run (steps 2 and 3) cannot run here; empty: it runs
cannot_emulate() { [ -n "$why_not" ] || why_not=$*; }

# No systemd here: mount binfmt_misc and register qemu's aarch64 entry ourselves. Its F flag
# makes the kernel open the interpreter now, so it also works inside the chroot.
binfmt_ready() {
    local binfmt=/proc/sys/fs/binfmt_misc
    if [ ! -e "$binfmt/register" ]; then
        mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null \
            || { cannot_emulate "cannot mount binfmt_misc (an unprivileged container?)"; return; }
    fi
    if [ ! -e "$binfmt/qemu-aarch64" ]; then
        cat /usr/lib/binfmt.d/qemu-aarch64.conf >"$binfmt/register" \
            || { cannot_emulate "cannot register qemu-aarch64 with binfmt_misc"; return; }
    fi
    grep -qx enabled "$binfmt/qemu-aarch64" || cannot_emulate "binfmt_misc entry qemu-aarch64 is disabled"
}

[ "$(uname -m)" = x86_64 ] || cannot_emulate "the host is $(uname -m), not x86-64"
[ "$(id -u)" = 0 ] || cannot_emulate "needs root (apt-get, binfmt_misc, debootstrap, chroot)"
command -v apt-get >/dev/null || cannot_emulate "no apt-get: needs Debian's qemu-user-static and debootstrap"
if [ -z "$why_not" ]; then
    step "Debian packages: qemu-user-static, debootstrap, the aarch64 cross linker"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        qemu-user-static debootstrap gcc-aarch64-linux-gnu libc6-dev-arm64-cross >/dev/null
    binfmt_ready
fi

step "wheels (scripts/build-wheels.sh)"
work=$(mktemp -d /tmp/voxwire-aarch64.XXXXXX)
root=${VOXWIRE_ARM64_ROOT:-$work/root}
cleanup() {
    if [ -n "${debootstrap_pid:-}" ] && kill -0 "$debootstrap_pid" 2>/dev/null; then
        kill "$debootstrap_pid"
        wait "$debootstrap_pid" || true
    fi
    # Ours (proc), and what an interrupted debootstrap leaves mounted.
    for m in proc sys dev/pts dev; do
        if mountpoint -q "$root/$m" 2>/dev/null; then umount -l "$root/$m"; fi
    done
    # --one-file-system: never follow a mount out of the work directory.
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT
# The arm64 root is built in the background while the wheels and the Rust tests compile (on two
# cores, compiling with LTO and emulating dpkg each keep one busy). debootstrap's own default
# mirror is used.
if [ -z "$why_not" ] && [ ! -x "$root/usr/bin/python3" ]; then
    debootstrap --arch=arm64 --variant=minbase --include=python3,python3-venv \
        bookworm "$root" >"$work/debootstrap.log" 2>&1 &
    debootstrap_pid=$!
fi
scripts/build-wheels.sh "$work/dist"
wheel=$(ls "$work"/dist/voxwire-*manylinux_2_17_aarch64.whl)
if [ -n "$why_not" ]; then
    echo "aarch64 emulated run SKIPPED: $why_not (both wheels above were built and checked)"
    exit 0
fi
rustup target add aarch64-unknown-linux-gnu

step "Rust core tests for aarch64 under qemu-user"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER=qemu-aarch64-static
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu # the cross toolchain's loader and libc
# Optimised (the tests are slow emulated otherwise) but without the release profile's thin LTO
# and single codegen unit, which make it compile several times slower. Rust neither contracts nor reorders
# float arithmetic, so the bits the tests check are the shipped wheel's.
CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    cargo test -p voxwire-audio --release --target aarch64-unknown-linux-gnu

if [ -n "${debootstrap_pid:-}" ]; then
    step "arm64 Debian 12 root (debootstrap; its second stage runs under qemu)"
    wait "$debootstrap_pid" || { tail -30 "$work/debootstrap.log"; exit 1; }
fi
# pip in the root trusts what the host trusts (the host may sit behind a TLS proxy), and
# resolves names like the host.
mkdir -p "$root/etc/ssl/certs" "$root/work"
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
in_root() {
    chroot "$root" /usr/bin/env -i PATH=/opt/venv/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
        PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1 \
        ${PIP_INDEX_URL:+PIP_INDEX_URL=$PIP_INDEX_URL} "$@"
}
in_root uname -m | grep -qx aarch64

step "aarch64 wheel into Debian's CPython (with the server extra for the demo)"
rm -rf "$root/work/tests"
cp "$wheel" "$root/work/"
mkdir -p "$root/work/tests"
cp tests/__init__.py tests/test_demo.py "$root/work/tests/"
cp -r tests/audio "$root/work/tests/audio"
find "$root/work/tests" -name __pycache__ -prune -exec rm -rf {} +
[ -x "$root/opt/venv/bin/python" ] || in_root python3 -m venv /opt/venv
in_root pip install -q --force-reinstall --no-deps "/work/$(basename "$wheel")"
in_root pip install -q "/work/$(basename "$wheel")[server]" "pytest>=8" "hypothesis>=6.100"
in_root python -c '
import platform, voxwire, voxwire._core as core
assert platform.machine() == "aarch64", platform.machine()
assert "site-packages" in voxwire.__file__, voxwire.__file__
assert core.resampler_kernel() == "neon", core.resampler_kernel()
print("voxwire", voxwire.__version__, "on", platform.machine(), "Python", platform.python_version(),
      "kernel", core.resampler_kernel())'

step "audio tests on aarch64 (every extension entry point) and voxwire demo"
in_root sh -c 'cd /work && python -m pytest -q -p no:cacheprovider \
    tests/audio/test_resample_api.py tests/audio/test_resample_quality.py \
    tests/audio/test_ring.py tests/audio/test_playback.py tests/audio/test_g711.py \
    tests/audio/test_input.py tests/audio/test_output.py \
    tests/test_demo.py::test_demo_json_tool_handoff_and_an_exact_barge_in --durations=10'

step "voxwire info on aarch64"
in_root sh -c 'cd /tmp && voxwire info'

step "aarch64 run passed in $(($(date +%s) - t0)) s"
