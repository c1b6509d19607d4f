"""The command line's rough edges, as the user sees them: what each mistake or interruption
prints, and that nothing hangs or ends in a traceback."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.children import child_env, default_sigint
from voxwire.audio import write_wav
from voxwire.cli import build_parser
from voxwire.console import split_heard


def voxwire(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "voxwire.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env or child_env(),
    )


def start(*args: str, sigint: bool = True) -> subprocess.Popen[str]:
    """``voxwire ARGS`` as a child; ``sigint``: with SIGINT's default action, whatever this
    process inherited (a suite run with ``nohup … &`` ignores it)."""
    return subprocess.Popen(
        [sys.executable, "-u", "-m", "voxwire.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
        cwd=Path(__file__).resolve().parents[1],
        preexec_fn=default_sigint if sigint else None,
    )


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """This process as a shell's background job (``nohup pytest … &``) runs it: SIGINT ignored,
    and inherited so by every child."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def test_quickstart_pace_0_runs_at_full_speed(tmp_path: Path) -> None:
    p = voxwire("quickstart", "--pace", "0", "--out", str(tmp_path / "r.wav"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "response done (completed)" in p.stdout


def interrupt_after_first_line(*args: str) -> tuple[int, str]:
    child = start(*args)
    assert child.stdout is not None
    first = child.stdout.readline()
    assert first, child.stderr.read() if child.stderr else ""
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=60)
    return child.returncode, stderr


def test_ctrl_c_in_demo_is_one_line_and_status_130(tmp_path: Path) -> None:
    code, stderr = interrupt_after_first_line("demo", "--realtime", "--out", str(tmp_path / "d"))
    assert code == 130
    assert stderr == "voxwire demo: interrupted\n"


def test_ctrl_c_in_quickstart_is_one_line_and_status_130(tmp_path: Path) -> None:
    code, stderr = interrupt_after_first_line(
        "quickstart", "--pace", "1", "--out", str(tmp_path / "q.wav")
    )
    assert code == 130
    assert stderr == "voxwire quickstart: interrupted\n"


def test_the_ctrl_c_tests_hold_in_a_suite_run_in_the_background(tmp_path: Path) -> None:
    """``nohup pytest … &``: the children the tests interrupt get SIGINT's default back."""
    with sigint_ignored():
        code, stderr = interrupt_after_first_line(
            "quickstart", "--pace", "1", "--out", str(tmp_path / "reply.wav")
        )
    assert (code, stderr) == (130, "voxwire quickstart: interrupted\n")


def test_a_server_started_as_a_background_job_keeps_sigint_ignored() -> None:
    """A non-interactive shell's ``voxwire serve &`` ignores SIGINT: the server keeps it so (as
    Python does), and stops on SIGTERM."""
    with sigint_ignored():
        server = start("serve", "--no-audio", "--port", "0", sigint=False)
    assert server.stdout is not None
    assert "Ctrl-C stops it" in server.stdout.readline()
    server.send_signal(signal.SIGINT)
    with pytest.raises(subprocess.TimeoutExpired):
        server.wait(2)  # still serving
    server.send_signal(signal.SIGTERM)
    _, stderr = server.communicate(timeout=30)
    assert (server.returncode, stderr) == (0, "")


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "--no-audio", "--port", "0"],
        ["web", "--port", "0"],
        ["phone", "tests.telephony.twilio_helpers:AGENT", "--port", "0"],
    ],
    ids=["serve", "web", "phone"],
)
def test_ctrl_c_in_a_serving_command_is_one_line_and_status_130(command: list[str]) -> None:
    code, stderr = interrupt_after_first_line(*command)
    assert (code, stderr) == (130, f"voxwire {command[0]}: interrupted\n")


def test_a_double_ctrl_c_while_a_call_opens_its_session_ends_phone_at_once() -> None:
    """The call's endpoint accepts the connection and never answers (a slow or unreachable
    service): Ctrl-C, twice, ends ``voxwire phone`` without waiting for the session's open
    timeout (whose "call ... failed" line would then show), and without a traceback."""
    import asyncio

    from voxwire.testing import TwilioCallSimulator

    with socket.socket() as hole:
        hole.bind(("127.0.0.1", 0))
        hole.listen()
        url = f"ws://127.0.0.1:{hole.getsockname()[1]}/v1/realtime"
        phone = start("phone", "tests.telephony.twilio_helpers:AGENT", "--url", url, "--port", "0")
        assert phone.stdout is not None
        port = re.search(r"answers on http://127\.0\.0\.1:(\d+)", phone.stdout.readline())
        assert port, phone.stderr.read() if phone.stderr else ""

        async def call() -> None:
            async with TwilioCallSimulator(f"ws://127.0.0.1:{port.group(1)}/media"):
                hole.settimeout(30)
                session, _ = await asyncio.to_thread(hole.accept)  # the call is opening
                with session:
                    phone.send_signal(signal.SIGINT)
                    phone.send_signal(signal.SIGINT)
                    await asyncio.to_thread(phone.wait, 60)

        asyncio.run(call())
        stdout, stderr = phone.communicate(timeout=10)
    assert (phone.returncode, stderr) == (130, "voxwire phone: interrupted\n")
    # the call's report line, as for every call that ends
    assert "call CA00000000000000000000000000000001 ended (cancelled) after " in stdout


@pytest.mark.parametrize("command", ["serve", "web", "phone"])
def test_every_serving_command_on_a_busy_port_suggests_another(command: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        args = {
            "serve": ["--no-audio"],
            "web": [],
            "phone": ["tests.telephony.twilio_helpers:AGENT"],
        }
        p = voxwire(command, *args[command], "--port", str(port))
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1, p.stderr
    assert f"port {port} is already in use" in p.stderr
    assert "choose another with --port N, or --port 0 for a free one" in p.stderr


def test_a_web_agent_that_cannot_be_loaded_is_a_usage_error() -> None:
    p = voxwire("web", "--agent", "nosuch:agent", "--port", "0")
    assert p.returncode == 2
    assert p.stderr == (
        "voxwire: --agent 'nosuch:agent' cannot be loaded: No module named 'nosuch'\n"
    )


def test_every_option_s_help_shows_its_default() -> None:
    """``web --port`` 8766, ``phone --port`` 8080, ``--pace`` 4, the output files ...: each
    option with a default says it in ``--help``."""
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a.choices, dict)]
    assert isinstance(sub.choices, dict)
    for name, command in sub.choices.items():
        text = "".join(command.format_help().split())
        for action in command._actions:
            if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
                assert f"(default:{action.default})" in text, (name, action.dest)
    shown = "".join(voxwire("phone", "--help").stdout.split())
    assert "--portPORTport(0:afreeone)(default:8080)" in shown


def test_serve_rejects_a_port_out_of_range() -> None:
    p = voxwire("serve", "--port", "99999")
    assert p.returncode == 2
    assert "argument --port: 99999 is not a port: expected 0..65535 (0: a free one)" in p.stderr
    assert "Traceback" not in p.stderr


def test_serve_on_a_busy_port_suggests_another() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        p = voxwire("serve", "--no-audio", "--port", str(port))
    assert p.returncode == 2
    assert p.stderr == (
        f"voxwire: 127.0.0.1 port {port} is already in use (another voxwire serve?): choose "
        "another with --port N, or --port 0 for a free one (the server prints it)\n"
    )


def test_resample_to_an_unwritable_path_is_one_line(tmp_path: Path) -> None:
    src = tmp_path / "in.wav"
    write_wav(src, np.zeros(1600, np.int16), 16000)
    p = voxwire("resample", str(src), str(tmp_path / "missing" / "out.wav"), "--rate", "24000")
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1, p.stderr
    assert "No such file or directory" in p.stderr
    assert str(tmp_path / "missing" / "out.wav") in p.stderr


def test_bench_rounds_must_be_at_least_one() -> None:
    p = voxwire("bench", "--rounds", "0")
    assert p.returncode == 2
    assert "argument --rounds: 0: expected a whole number >= 1" in p.stderr


def test_every_subcommand_says_what_it_does_in_help() -> None:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a.choices, dict)]
    assert isinstance(sub.choices, dict)
    for name, command in sub.choices.items():
        assert len(command.description or "") > 60, name
    p = voxwire("serve", "--help")
    assert "Runs the local realtime server" in p.stdout


def test_serve_scenario_demo_gives_voxwire_demo_url_its_answers(tmp_path: Path) -> None:
    server = start("serve", "--scenario", "demo", "--port", "0", "--pace", "0")
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        match = re.search(r"ws://127\.0\.0\.1:(\d+)/v1", banner)
        assert match, banner + (server.stderr.read() if server.stderr else "")
        url = f"ws://127.0.0.1:{match.group(1)}/v1/realtime?model=gpt-realtime"
        p = voxwire("demo", "--url", url, "--out", str(tmp_path / "demo.wav"))
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Order 42 shipped on Monday" in p.stdout
    assert "checked: the speaker played exactly" in p.stdout  # --verbose: the samples


def test_serve_names_the_built_in_scenarios_for_a_missing_file() -> None:
    p = voxwire("serve", "--scenario", "no-such-scenario.json")
    assert p.returncode == 2
    assert p.stderr == (
        "voxwire: --scenario no-such-scenario.json: no such file, and not a built-in scenario "
        "(demo, quickstart)\n"
    )


@pytest.mark.parametrize(
    ("command", "advice"),
    [
        (["demo"], "the user's lines are spoken with a local voice"),
        (["quickstart"], "the user's lines are spoken with a local voice"),
        (["quickstart", "--wav", "QUESTION"], "talk to another endpoint with --url"),
    ],
)
def test_missing_voice_is_short_and_says_what_helps(
    tmp_path: Path, command: list[str], advice: str
) -> None:
    """Neither espeak-ng (a library path that is not there) nor hibari (a package that fails to
    import, first on the path) can speak: the command says what to install, briefly, and not
    the server's --no-audio (these turns are spoken)."""
    fake = tmp_path / "site" / "hibari"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('simulated: not installed')\n")
    env = child_env(VOXWIRE_ESPEAK_LIBRARY=str(tmp_path / "none.so"))
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "site"), env["PYTHONPATH"]])
    question = tmp_path / "q.wav"
    write_wav(question, np.zeros(16000, np.int16), 16000)
    args = [str(question) if arg == "QUESTION" else arg for arg in command]
    p = voxwire(*args, "--out", str(tmp_path / "out.wav"), env=env)
    assert p.returncode == 2
    message = p.stderr.strip()
    assert "\n" not in message
    assert len(message) < 400, message
    assert advice in message
    assert "pip install 'voxwire[server]' (espeak-ng) or 'voxwire[hibari]'" in message
    assert "--no-audio" not in message
    assert "hibari could not be imported: simulated: not installed" in message


def test_split_heard_cuts_the_transcript_at_the_nearest_word_boundary() -> None:
    text = "one two three four five six seven eight"
    assert split_heard(text, 500, 1000) == ("one two three four", "five six seven eight")
    assert split_heard(text, 0, 1000) == ("", text)
    assert split_heard(text, 1000, 1000) == (text, "")
    assert split_heard(text, 20, 0) == ("", text)
    assert split_heard("unbroken", 500, 1000) == ("unbroken", "")


def test_info_times_each_preset_after_a_warm_up() -> None:
    """Timed cold, the first preset paid for page faults and the CPU's clock ramping up (fast
    looked slower than hq); the figures' order is not asserted: timing is for benches/."""
    p = voxwire("info")
    assert p.returncode == 0, p.stderr
    assert "(best of 3, after a warm-up)" in p.stdout


def test_a_failure_while_speaking_ends_the_quickstart_instead_of_hanging() -> None:
    """The speaking side fails: the turn ends with its error (as the pace-0 ZeroDivisionError
    should have) instead of waiting forever for a turn that never comes."""
    import asyncio

    from voxwire.quickstart import together

    async def speak() -> None:
        await asyncio.sleep(0)
        raise ConnectionError("the connection went away")

    async def follow() -> None:
        await asyncio.Event().wait()  # a turn that never ends by itself

    async def body() -> None:
        await asyncio.wait_for(together(speak(), follow()), 5)

    with pytest.raises(ConnectionError, match="went away"):
        asyncio.run(body())
