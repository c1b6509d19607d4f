"""scripts/ci-aarch64.sh builds and checks the device wheels in every CI run: only the emulated
run is skipped where it cannot run (no root, no apt-get, no binfmt_misc). Here it runs without
apt-get and without the wheel tools (maturin, auditwheel) on its PATH: it must go on to
scripts/build-wheels.sh, which fails saying what is missing — not end with status 0 having
built nothing, as it did before."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What the script and scripts/build-wheels.sh call before they need the wheel tools.
COMMANDS = ["bash", "env", "uname", "id", "date", "dirname", "mktemp", "rm", "mountpoint"]
COMMANDS += ["umount", "cat", "grep", "ls", "mkdir", "kill", "python", "python3"]


def test_without_emulation_the_wheels_are_still_built(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in COMMANDS:
        found = shutil.which(name)
        if found is None:
            pytest.skip(f"{name} is not installed")
        (bin_dir / name).symlink_to(found)
    assert shutil.which("apt-get", path=str(bin_dir)) is None
    assert shutil.which("maturin", path=str(bin_dir)) is None
    env = {**os.environ, "PATH": str(bin_dir)}
    done = subprocess.run(
        [str(bin_dir / "bash"), "scripts/ci-aarch64.sh"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert re.search(r"== \[aarch64 \d+s\] wheels \(scripts/build-wheels.sh\)", done.stdout)
    assert "maturin not found" in done.stderr, done.stdout + done.stderr
    assert done.returncode != 0
    assert "SKIPPED" not in done.stdout
