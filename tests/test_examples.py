"""The apps in examples/, run as a user runs them: as programs (child processes using this run's
voxwire), against the local server on loopback with each example's scenario."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.children import ROOT, child_env
from tests.store.conftest import _why_no_postgres
from voxwire.audio import read_wav
from voxwire.server import Pacing, RealtimeServer, Scenario

EXAMPLES = ROOT / "examples"
FAST = Pacing(audio_pace=0, text_tokens_per_s=0)


@asynccontextmanager
async def local_server(scenario: str, **options: object) -> AsyncIterator[RealtimeServer]:
    options.setdefault("tts", None)
    options.setdefault("pacing", FAST)
    path = EXAMPLES / "scenarios" / scenario
    async with RealtimeServer(scenario=Scenario.from_file(path), **options) as server:  # type: ignore[arg-type]
        yield server


async def example(*args: str, cwd: Path | None = None) -> str:
    """Run ``python examples/ARGS...``; its stdout (fails with its stderr on a non-zero exit)."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(),
        cwd=cwd or ROOT,
    )
    stdout, stderr = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 0, stdout.decode() + stderr.decode()
    return stdout.decode()


def test_handoff_example_hands_over_to_billing_and_its_tool() -> None:
    async def body() -> str:
        async with local_server("handoff.json") as server:
            return await example(
                "examples/handoff.py", "--url", server.url(), "I was charged twice for order 42."
            )

    lines = asyncio.run(body()).splitlines()
    assert lines == [
        "user: I was charged twice for order 42.",
        "FrontDesk: Let me pass you to our billing desk.",
        "[handoff] FrontDesk -> Billing",
        '[tool] refund_status -> {"order_id":"42","status":"refund was started on Monday",'
        '"days":"five"}',
        "Billing: Billing desk here. For order 42 the refund was started on Monday; it takes "
        "five working days.",
    ]


def test_handoff_example_ends_its_turn_on_a_failed_response_and_says_why() -> None:
    """The server's responses fail (its chat endpoint is unreachable, as with `voxwire serve
    --chat-url http://127.0.0.1:1/v1`): the example prints the reason and returns, where it
    used to print ``user: hello`` and wait forever."""
    from voxwire.server import ChatCompletionsResponder

    async def body() -> str:
        unreachable = ChatCompletionsResponder("http://127.0.0.1:1/v1", "tiny-1", timeout_s=5)
        options = {"tts": None, "pacing": FAST, "responder": unreachable}
        async with RealtimeServer(**options) as server:  # type: ignore[arg-type]
            return await example("examples/handoff.py", "--url", server.url(), "hello")

    lines = asyncio.run(body()).splitlines()
    assert lines[0] == "user: hello"
    assert lines[1].startswith("[response failed] chat endpoint http://127.0.0.1:1/v1/chat/")
    assert "unreachable" in lines[1]
    assert len(lines) == 2


def run_example_failing(args: list[str], drop: tuple[str, ...], **env: str) -> tuple[int, str]:
    """``python examples/ARGS`` with the variables ``drop`` unset; (status, stdout + stderr).
    20 s: what the user must fix is said at once, not after a connection times out."""
    environment = {k: v for k, v in child_env(**env).items() if k not in drop}
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=environment,
        cwd=ROOT,
        timeout=20,
    )
    return done.returncode, done.stdout + done.stderr


def test_examples_without_their_key_or_store_say_so_in_one_line() -> None:
    """device_assistant.py without OPENAI_API_KEY printed a 32-line traceback;
    persistent_agent.py without VOXWIRE_STORE waited 31 s on the default socket and printed 41
    lines. Each says what to set, in one line, at once; a store that refuses is one line too."""
    code, said = run_example_failing(["examples/device_assistant.py"], ("OPENAI_API_KEY",))
    assert code == 2
    assert said.splitlines() == [
        "device_assistant.py: the hosted service needs OPENAI_API_KEY; or run offline: "
        "voxwire serve & and --url ws://127.0.0.1:8765/v1/realtime"
    ]
    no_store = ("VOXWIRE_STORE", "PGHOST", "PGSERVICE")
    persistent = ["examples/persistent_agent.py", "--conversation", "c1", "hi"]
    code, said = run_example_failing(persistent, no_store)
    assert code == 2
    assert said.splitlines() == [
        "persistent_agent.py: no database: set VOXWIRE_STORE (or --store) to a libpq conninfo, "
        "e.g. postgresql://agent@db:5432/voice"
    ]
    pytest.importorskip("psycopg_pool")
    refused = {"VOXWIRE_STORE": "postgresql://agent@127.0.0.1:1/voice"}
    code, said = run_example_failing(persistent, ("PGHOST", "PGSERVICE"), **refused)
    assert code == 1
    (line,) = said.splitlines()
    assert line.startswith("persistent_agent.py: the store postgresql 127.0.0.1:1/voice")
    assert "cannot be reached" in line


def test_persistent_agent_goes_on_after_a_restart_from_postgresql(
    request: pytest.FixtureRequest,
) -> None:
    """Two runs of the example, each a process of its own against a server of its own (the
    first server is gone when the second run starts): the second run finds the conversation in
    PostgreSQL, replays it to the new server and answers after it."""
    reason = _why_no_postgres()
    if reason is not None:
        pytest.skip(reason)
    conninfo: str = request.getfixturevalue("pg_cluster")
    schema = f"example_{uuid.uuid4().hex[:8]}"

    async def run(line: str) -> str:
        async with local_server("orders.json") as server:
            return await example(
                "examples/persistent_agent.py",
                *("--store", conninfo, "--schema", schema, "--conversation", "call-1"),
                *("--url", server.url(), line),
            )

    first = asyncio.run(run("Where is my order 42?"))
    assert "(earlier)" not in first
    assert "agent: Order 42 shipped on Monday; it arrives tomorrow." in first
    second = asyncio.run(run("Thank you!")).splitlines()
    assert second == [
        "  (earlier) user: Where is my order 42?",
        '  (earlier) tool lookup_order -> {"order_id":"42","status":"shipped on Monday",'
        '"arrives":"tomorrow"}',
        "  (earlier) assistant: Order 42 shipped on Monday; it arrives tomorrow.",
        "user: Thank you!",
        "agent: You are welcome. Anything else about your order?",
    ]


def test_persistent_agent_ends_its_turn_on_a_failed_response(
    request: pytest.FixtureRequest,
) -> None:
    """As the handoff example: a failed response ends the turn with its reason (the example
    used to wait forever for an answer that never comes)."""
    from voxwire.server import ChatCompletionsResponder

    reason = _why_no_postgres()
    if reason is not None:
        pytest.skip(reason)
    conninfo: str = request.getfixturevalue("pg_cluster")
    schema = f"example_{uuid.uuid4().hex[:8]}"

    async def body() -> str:
        unreachable = ChatCompletionsResponder("http://127.0.0.1:1/v1", "tiny-1", timeout_s=5)
        options = {"tts": None, "pacing": FAST, "responder": unreachable}
        async with RealtimeServer(**options) as server:  # type: ignore[arg-type]
            return await example(
                "examples/persistent_agent.py",
                *("--store", conninfo, "--schema", schema, "--conversation", "call-9"),
                *("--url", server.url(), "hello"),
            )

    lines = asyncio.run(body()).splitlines()
    assert lines[0] == "user: hello"
    assert lines[1].startswith("[response failed] chat endpoint http://127.0.0.1:1/v1/chat/")
    assert len(lines) == 2


def spoken(*parts: str | float) -> np.ndarray[Any, np.dtype[np.int16]]:
    """24 kHz PCM16: each text spoken by the local server's voice, each number seconds of
    silence."""
    from voxwire.server.engines.tts import Voice

    voice = Voice.load("auto")
    try:
        pcm = []
        for part in parts:
            if isinstance(part, str):
                audio = voice.speak_blocking(part, "echo", 1.0, "audio/pcm").audio
                pcm.append(np.frombuffer(audio, dtype="<i2").astype(np.int16))
            else:
                pcm.append(np.zeros(int(part * 24_000), np.int16))
    finally:
        voice.close()
    return np.concatenate(pcm)


def test_device_assistant_answers_and_is_cut_by_local_barge_in(tmp_path: Path) -> None:
    """A WAV file as the microphone (played in real time), a WAV-writing virtual speaker (real
    time too): the user asks, the agent answers at length, the user talks over it; the local
    detector cuts it, and the truncation is what the speaker played."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        import device_assistant
    finally:
        sys.path.remove(str(EXAMPLES))
    from voxwire.audio import WavFileInput, WavFileOutput, write_wav

    question = tmp_path / "user.wav"
    write_wav(
        question, spoken(0.3, "What can you tell me?", 1.5, "Stop, please stop.", 1.5), 24_000
    )
    answer = " ".join(["Here is a long answer that goes on for quite a while."] * 6)
    scenario = Scenario.from_mapping({"rules": [], "fallback": answer})

    async def body() -> tuple[Any, list[Any]]:
        pacing = Pacing(audio_pace=4)
        async with RealtimeServer(scenario=scenario, pacing=pacing) as server:
            seen: list[Any] = []

            def until(event: Any) -> bool:
                seen.append(event)
                return bool(event.type == "audio_interrupted")

            speaker = WavFileOutput(tmp_path / "heard.wav", latency_ms=20)
            session = await device_assistant.assist(
                WavFileInput(question), speaker, url=server.url(), until=until
            )
            return session, seen

    session, seen = asyncio.run(asyncio.wait_for(body(), 30))
    assert session.microphone.barge_ins >= 1  # the local detector heard the user
    cut = seen[-1]
    assert cut.type == "audio_interrupted"
    assert cut.played_ms is not None
    assert 200 < cut.played_ms < 20_000  # some of the answer was heard, not all of it
    heard = read_wav(tmp_path / "heard.wav").pcm
    assert np.abs(heard.astype(np.int32)).max() > 1000  # the agent was heard before the cut


def test_the_example_test_suite_passes() -> None:
    """examples/testing_your_agent: a user's own tests of their agent, run as they run them."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "testing_your_agent"],
        env=child_env(),
        cwd=EXAMPLES,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout


def test_timeline_example_writes_the_report_of_the_handoff(tmp_path: Path) -> None:
    report = tmp_path / "call.html"

    async def body() -> str:
        async with local_server("handoff.json") as server:
            return await example(
                "examples/timeline.py",
                *("--url", server.url(), "--report", str(report), "--watch"),
                "I was charged twice for order 42.",
            )

    lines = asyncio.run(body()).splitlines()
    assert lines[0].startswith("live timeline: http://127.0.0.1:")
    assert lines[0].endswith("/?watch")
    assert lines[1] == f"report: {report}"
    assert lines[2].endswith("3 responses, 1 tool call(s), 1 handoff(s)")
    html = report.read_text("utf-8")
    assert '"kind":"handoff","from_agent":"FrontDesk","to_agent":"Billing"' in html


def test_phone_agent_greets_answers_its_key_menu_and_reports_the_call() -> None:
    """examples/phone_agent.py as a program; Twilio is voxwire.testing's simulator: the caller
    only listens and hears the shop's greeting whole, presses 1, the agent looks the hours up
    with its tool and the caller hears the answer; the example prints the call's report."""
    from tests.telephony.twilio_helpers import spoken
    from voxwire.testing import TwilioCallSimulator

    # 95 %: espeak-ng keeps state between utterances (tests/audio/speech.py), so the server's
    # greeting, spoken after whatever this process said before, is a little longer or shorter.
    greeting = len(spoken("Hello, this is the shop. Press 1 for our opening hours.", "alloy"))
    greeting = greeting * 95 // 100

    async def body() -> tuple[int, int, str]:
        async with local_server("phone.json", tts="espeak") as server:
            child = await asyncio.create_subprocess_exec(
                sys.executable, "examples/phone_agent.py", "--url", server.url(), "--port", "0",
                stdout=asyncio.subprocess.PIPE, env=child_env(), cwd=ROOT,
            )  # fmt: skip
            try:
                assert child.stdout is not None
                line = (await asyncio.wait_for(child.stdout.readline(), 60)).decode()
                base = line.split()[2].replace("http://", "ws://")
                async with TwilioCallSimulator(base + "/media") as call:
                    await call.until(lambda: call.agent_samples_heard >= greeting, timeout_s=60)
                    before_keys = call.agent_samples_heard
                    await call.press("1")
                    await call.until(lambda: call.agent_samples_heard >= greeting + 12_000)
                report = (await asyncio.wait_for(child.stdout.readline(), 30)).decode()
                return before_keys, call.agent_samples_heard, report
            finally:
                child.terminate()
                await child.wait()

    before_keys, heard, report = asyncio.run(body())
    assert before_keys >= greeting  # the greeting, heard whole before the caller did anything
    assert heard >= greeting + 12_000  # then 1.5 s of "Today we are open from nine to six."
    assert report.startswith("call CA00000000000000000000000000000001 ended (stop) after ")
    assert ", keys 1" in report


def test_the_examples_docs_agree_on_the_servers_port_and_say_to_install_pytest() -> None:
    """The docstrings said 8765 where examples/README.md said 8766 (`voxwire web`'s port):
    every offline command names `voxwire serve`'s own default port; and the README says to
    install pytest (voxwire does not) before running the example suite with it."""
    import re

    from voxwire.cli import build_parser

    serve = build_parser().parse_args(["serve"])
    texts = {path.name: path.read_text() for path in EXAMPLES.glob("*.py")}
    texts["README.md"] = (EXAMPLES / "README.md").read_text()
    for name, text in texts.items():
        ports = {int(p) for p in re.findall(r"ws://127\.0\.0\.1:(\d+)/v1/realtime", text)}
        ports |= {int(p) for p in re.findall(r"voxwire serve[^\n&]*--port (\d+)", text)}
        assert ports <= {serve.port}, f"{name}: {sorted(ports)}; voxwire serve uses {serve.port}"
    readme = texts["README.md"]
    assert "pip install pytest" in readme
    assert readme.index("pip install pytest") < readme.index("python -m pytest examples/")


def test_the_commands_default_output_files_are_ignored_in_the_checkout() -> None:
    """`voxwire demo` and `voxwire quickstart` write to the current folder by default; run in
    the checkout, they left untracked WAV files."""
    from voxwire.cli import build_parser
    from voxwire.demo.command import DEFAULT_OUT

    quickstart = build_parser().parse_args(["quickstart"])
    names = [DEFAULT_OUT, str(quickstart.out), f"examples/{DEFAULT_OUT}"]
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", *names], cwd=ROOT, capture_output=True, text=True
    )
    assert done.stdout.split() == names


def test_mcp_agent_example_uses_its_stdio_mcp_server_and_asks_before_reserving() -> None:
    async def body() -> tuple[str, str]:
        async with local_server("mcp_agent.json") as server:
            stock = await example(
                "examples/mcp_agent.py", "--url", server.url(), "Is the blue kettle in stock?"
            )
            refused = await example(
                "examples/mcp_agent.py", "--url", server.url(), "Please put one aside for me."
            )
            return stock, refused

    stock, refused = asyncio.run(body())
    assert stock.splitlines() == [
        "user: Is the blue kettle in stock?",
        # the SDK's server sends a dict result as indented JSON text (one line here)
        '[tool] stock_level -> { "item": "blue kettle", "known": true, "in_stock": 3 }',
        "Shop: We have 3 of the blue kettle in stock.",
    ]
    assert refused.splitlines() == [
        "user: Please put one aside for me.",
        '[approval] reserve {"item":"blue kettle","customer":"Ada"} -> no',
        "Shop: The customer said no.",
    ]
