"""How the serving commands stop (voxwire/serving.py), in this process: the first signal asks
for an orderly shutdown, a second one does not wait for it; Ctrl-C is KeyboardInterrupt (the
command's one line and status 130), SIGTERM status 0."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
from collections.abc import Iterator

import pytest

from voxwire.serving import until_stopped


@pytest.fixture(autouse=True)
def sigint_honoured() -> Iterator[None]:
    """SIGINT as an interactive run has it, also when the suite runs with it ignored."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_second_ctrl_c_ends_a_shutdown_that_hangs() -> None:
    shutting_down: list[bool] = []

    async def run(stop: asyncio.Event) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        await stop.wait()
        shutting_down.append(True)
        os.kill(os.getpid(), signal.SIGINT)
        # A shutdown that would not end by itself (bounded: a failure, not a hung suite).
        await asyncio.wait_for(asyncio.Event().wait(), 60)

    with pytest.raises(KeyboardInterrupt):
        until_stopped(run, "busy")
    assert shutting_down == [True]


def test_sigterm_is_an_orderly_stop_with_status_0() -> None:
    async def run(stop: asyncio.Event) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        await stop.wait()

    assert until_stopped(run, "busy") == 0
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # the handlers are removed


def test_a_busy_port_is_status_2_with_the_advice(capsys: pytest.CaptureFixture[str]) -> None:
    async def run(stop: asyncio.Event) -> None:
        raise OSError(errno.EADDRINUSE, "address already in use")

    assert until_stopped(run, "voxwire x: port 1 is busy: choose another with --port N") == 2
    assert capsys.readouterr().err == "voxwire x: port 1 is busy: choose another with --port N\n"
