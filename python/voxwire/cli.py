"""The ``voxwire`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from voxwire import __version__
from voxwire.arguments import (
    QUICKSTART_OUT,
    ShowDefaults,
    output_file,
    pace,
    port,
    positive,
)
from voxwire.audio import Resampler, read_wav, resampler_kernel, write_wav
from voxwire.bench import stream_resampler
from voxwire.serving import until_stopped

if TYPE_CHECKING:
    import asyncio

    from voxwire.server import ChatCompletionsResponder, Scenario


def _info(_: argparse.Namespace) -> int:
    """Report the build and run a short self-check of the audio core on this machine."""
    print(f"voxwire {__version__}")
    print(f"resampler kernel: {resampler_kernel()}")
    rng = np.random.default_rng(0)
    print("self-check, 1 s of audio in 20 ms chunks (best of 3, after a warm-up):")
    print(f"  {'conversion':<16}{'preset':<7}{'delay ms':>9}{'us/chunk':>10}{'x realtime':>12}")
    for in_hz, out_hz in ((48000, 24000), (24000, 48000), (16000, 24000), (8000, 24000)):
        signal = (rng.standard_normal(in_hz) * 3000).astype(np.int16)
        chunk = in_hz // 50
        for quality in ("fast", "hq"):
            # A warm-up stream first (page faults, caches, the CPU's clock ramping up): without
            # it the first preset timed pays for them. Then the best of three.
            stream_resampler(Resampler(in_hz, out_hz, quality).process, signal, chunk)
            timings = []
            for _round in range(3):
                r = Resampler(in_hz, out_hz, quality)
                produced, elapsed = stream_resampler(r.process, signal, chunk)
                timings.append(elapsed)
            elapsed = min(timings)
            if produced != out_hz:
                print(f"  {in_hz}->{out_hz}: produced {produced} samples, expected {out_hz}")
                return 1
            delay_ms = r.output_delay() / out_hz * 1000
            print(
                f"  {f'{in_hz}->{out_hz}':<16}{quality:<7}{delay_ms:>9.2f}"
                f"{elapsed / 50 * 1e6:>10.1f}{1 / elapsed:>12.0f}"
            )
    return 0


def _resample(args: argparse.Namespace) -> int:
    """Resample a WAV file (mixing it down to mono) to another rate."""
    audio = read_wav(args.input)
    r = Resampler(audio.rate_hz, args.rate, args.quality)
    out = np.concatenate([r.process(audio.pcm), r.flush()])
    if not args.keep_delay:
        # Drop the filter's delay so the output lines up with the input in time.
        d = round(r.output_delay())
        out = out[d : d + round(len(audio.pcm) * args.rate / audio.rate_hz)]
    write_wav(args.output, np.ascontiguousarray(out), args.rate)
    print(
        f"{args.input}: {audio.rate_hz} Hz x {audio.source_channels} ch -> "
        f"{args.output}: {args.rate} Hz mono, {len(out)} samples"
    )
    return 0


def _serve(args: argparse.Namespace) -> int:
    """Run the local realtime server until interrupted (Ctrl-C)."""
    # Imported here: the other subcommands must not need the server's dependencies.
    from voxwire.server import Pacing, RealtimeServer, faults_from_file

    try:
        scenario = _scenario(args.scenario)
        token = _secret_from_env(args.token_env)
        chat = _chat_responder(args, scenario)
    except _UsageError as exc:
        print(f"voxwire: {exc}", file=sys.stderr)
        return 2
    faults = faults_from_file(args.faults) if args.faults else ()
    server = RealtimeServer(
        args.host,
        args.port,
        token=token,
        scenario=scenario,
        responder=chat,
        faults=faults,
        tts=None if args.no_audio else args.tts,
        pacing=Pacing(audio_pace=args.pace, text_tokens_per_s=args.text_rate),
        max_session_s=(
            args.max_session_seconds
            if args.max_session_seconds is not None
            else args.max_session_minutes * 60
        ),
        audio_budget_bytes=int(args.audio_budget_mb * 1024 * 1024),
        observer=_metrics_observer(args.metrics_port),
    )

    async def run(stop: asyncio.Event) -> None:
        async with server:
            print(
                f"voxwire realtime server on {server.base_url}/realtime "
                f"(GPT-Live: {server.base_url}/live/sessions) "
                f"(token {'required' if token else 'not required'}, "
                f"voice {server.tts_engine or 'none: text only'}"
                + (f"; answers from {chat.url} ({chat.model})" if chat else "")
                + (f"; {len(faults)} fault(s) armed" if faults else "")
                + "); Ctrl-C stops it",
                flush=True,
            )
            await stop.wait()

    return until_stopped(
        run,
        f"voxwire: {args.host} port {args.port} is already in use (another voxwire serve?): "
        "choose another with --port N, or --port 0 for a free one (the server prints it)",
        metrics_port=args.metrics_port,
    )


METRICS_HELP = "serve the sessions' metrics (Prometheus) on this 127.0.0.1 port; docs/operations.md"


def _metrics_observer(port: int | None) -> Any:
    """``--metrics-port``: the served connections' events into the process's export."""
    if port is None:
        return None
    from voxwire.export import process

    return process.observe_server


#: Scenarios ``voxwire serve --scenario NAME`` knows by name (a path to a JSON file otherwise).
BUILT_IN_SCENARIOS = ("demo", "quickstart")


def _scenario(value: str | None) -> Scenario | None:
    """``--scenario``: a built-in scenario's name, or a JSON file (``None``: the default)."""
    from pathlib import Path

    from voxwire.server import Scenario

    if value is None:
        return None
    if value in BUILT_IN_SCENARIOS and not Path(value).exists():
        if value == "demo":
            from voxwire.demo.script import SCENARIO

            return SCENARIO
        from voxwire.quickstart import REPLY

        return Scenario.from_mapping({"rules": [], "fallback": REPLY})
    if not Path(value).is_file():
        raise _UsageError(
            f"--scenario {value}: no such file, and not a built-in scenario "
            f"({', '.join(BUILT_IN_SCENARIOS)})"
        )
    return Scenario.from_file(value)


class _UsageError(Exception):
    """The command line asks for something that cannot be: exit status 2 with this message."""


def _secret_from_env(variable: str | None) -> str | None:
    """The value of ``variable`` (None if no variable is named); it must not be empty."""
    import os

    if not variable:
        return None
    value = os.environ.get(variable)
    if not value:
        raise _UsageError(f"environment variable {variable} is empty or unset")
    return value


def _chat_responder(args: argparse.Namespace, scenario: object) -> ChatCompletionsResponder | None:
    """The chat-completions responder of ``--chat-url``/``--chat-model``, if asked for."""
    from voxwire.server import ChatCompletionsResponder

    if not (args.chat_url or args.chat_model):
        return None
    if not (args.chat_url and args.chat_model) or scenario is not None:
        raise _UsageError("--chat-url and --chat-model go together, and replace --scenario")
    chat_key = _secret_from_env(args.chat_key_env)
    return ChatCompletionsResponder(args.chat_url, args.chat_model, api_key=chat_key)


def _quickstart(args: argparse.Namespace) -> int:
    """One offline spoken turn: local server, synthetic user speech, spoken reply to a WAV."""
    from pathlib import Path

    from voxwire import quickstart

    wav = Path(args.wav) if args.wav else None
    return quickstart.main(args.out, args.pace, wav=wav, url=args.url)


def _bench(args: argparse.Namespace) -> int:
    """A quick table of the audio path's costs on this machine (voxwire/bench.py)."""
    from voxwire.bench import print_table

    title = f"voxwire {__version__}, resampler kernel {resampler_kernel()}; per 20 ms chunk"
    print(f"{title}:")
    measured = print_table(args.rounds)
    if args.report:
        from voxwire.bench_report import write_report

        write_report(measured, Path(args.report), title)
        print(f"report: {args.report}")
    return 0


def _talk(args: argparse.Namespace) -> int:
    """Microphone and speaker against a Realtime endpoint (voxwire/talk.py)."""
    from voxwire import talk

    return talk.main(talk.TalkOptions(args.url, args.input, args.output, args.json, args.aec))


def _demo(args: argparse.Namespace) -> int:
    """The offline spoken conversation (voxwire/demo): tool, handoff, barge-in, exact cut."""
    from voxwire.demo import command

    return command.run(args)


def _web(args: argparse.Namespace) -> int:
    """The browser page (voxwire/web): talk to an agent, watch the timeline."""
    from voxwire.web import command

    agent = command.load_agent(args.agent)  # a bad --agent: status 2 before anything starts
    return until_stopped(
        lambda stop: command.serve(args, agent, stop),
        f"voxwire web: port {args.port} is already in use: choose another with --port N, "
        "or --port 0 for a free one (the page's address is printed)",
        metrics_port=args.metrics_port,
    )


def _add_web(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    web = sub.add_parser(
        "web",
        help="talk to an agent from a browser page, with a live timeline (docs/web.md)",
        description="Serve a page on 127.0.0.1: the browser's microphone to the agent, its "
        "audio back, truncated at what the page played; a live timeline of the session.",
    )
    web.add_argument(
        "--agent",
        default="voxwire.demo.script:agents",
        help="module:attribute of a RealtimeAgent or a function making one (the demo's agents)",
    )
    web.add_argument("--url", help="Realtime endpoint (OPENAI_API_KEY); default: a local server")
    web.add_argument("--port", type=port, default=8766, help="port on 127.0.0.1 (0: any free)")
    web.add_argument("--metrics-port", type=port, help=METRICS_HELP)
    web.add_argument(
        "--silence-ms", type=positive, default=500, help="server VAD's end-of-turn pause"
    )
    web.add_argument("--open", action="store_true", help="open the page in the default browser")
    web.set_defaults(func=_web)


def _add_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dm = sub.add_parser(
        "demo",
        help="a spoken conversation with an agent (tool, handoff, barge-in), offline",
        description="Runs a scripted spoken conversation against the local realtime server "
        "started in-process: the user's lines are synthesised offline and played in as WAV "
        "input, the agent calls a tool and hands off, and the user cuts it off mid-reply. "
        "Prints the transcript as it happens and metrics at the end.",
    )
    dm.add_argument(
        "--out",
        type=output_file,
        help="WAV of what the speaker played (default: voxwire-demo.wav; checked before the "
        "demo runs)",
    )
    dm.add_argument(
        "--url",
        help="run the same conversation against this Realtime endpoint (ws://... or wss://...) "
        "instead of a local server; OPENAI_API_KEY is used if set (the demo's answers from a "
        "separate server: voxwire serve --scenario demo)",
    )
    dm.add_argument(
        "--realtime",
        action="store_true",
        help="pace it as a real conversation (default: faster than real time, virtual clock)",
    )
    dm.add_argument("--json", action="store_true", help="print the events as JSON lines")
    dm.add_argument(
        "--verbose",
        action="store_true",
        help="the cut's truncation check with its sample positions on the speaker",
    )
    dm.add_argument(
        "--report",
        metavar="HTML",
        type=output_file,
        help="write the session's timeline to this file (checked before the demo runs)",
    )
    dm.add_argument(
        "--room",
        choices=["speakerphone"],
        help="the conversation on a speakerphone in a simulated room (echo 6 dB over the user, "
        "a cough, a barge-in): the session runs the microphone with local barge-in and "
        "false-interruption recovery (docs/audio-io.md)",
    )
    dm.add_argument(
        "--aec",
        action="store_true",
        help="the room's microphone cancels the speaker's echo (EchoCancelledInput); implies "
        "--room speakerphone, the one scene with an echo to cancel",
    )
    dm.set_defaults(func=_demo)


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sv = sub.add_parser(
        "serve",
        help="run the local realtime server (docs/server.md)",
        description="Runs the local realtime server (the OpenAI Realtime GA protocol over "
        "WebSocket) on loopback until Ctrl-C: answers from scenario rules or a chat-completions "
        "endpoint, spoken with espeak-ng or hibari. Clients connect to "
        "ws://HOST:PORT/v1/realtime (docs/server.md).",
    )
    sv.add_argument("--host", default="127.0.0.1", help="address to bind (loopback)")
    sv.add_argument("--port", type=port, default=8765, help="port to listen on (0: a free one)")
    sv.add_argument("--metrics-port", type=port, help=METRICS_HELP)
    sv.add_argument(
        "--scenario",
        metavar="FILE|NAME",
        help="the rules responder's scenario: a JSON file, or a built-in one by name: 'demo' "
        "(the answers of voxwire demo, for voxwire demo --url) or 'quickstart'",
    )
    sv.add_argument(
        "--token-env",
        metavar="VAR",
        help="require 'Authorization: Bearer <token>' with the token read from this variable",
    )
    sv.add_argument("--no-audio", action="store_true", help="answer in text only (no voice)")
    sv.add_argument(
        "--tts",
        choices=("auto", "hibari", "espeak"),
        default="auto",
        help="the voice: hibari (the 'hibari' extra), espeak-ng (the 'server' extra), or auto: "
        "espeak-ng when installed, else hibari",
    )
    sv.add_argument("--pace", type=pace, default=4.0, help="audio speed, x real time (0: max)")
    sv.add_argument("--text-rate", type=float, default=100.0, help="text deltas per s (0: max)")
    limit = sv.add_mutually_exclusive_group()
    limit.add_argument("--max-session-minutes", type=float, default=60.0, help="session lifetime")
    limit.add_argument(
        "--max-session-seconds",
        type=float,
        help="session lifetime in seconds, e.g. 2 to exercise a client's renewal",
    )
    sv.add_argument(
        "--audio-budget-mb",
        type=float,
        default=32.0,  # voxwire.server.core.conversation.DEFAULT_AUDIO_BUDGET_BYTES
        help="item audio each session keeps for truncate/retrieve, in MiB (older parts keep "
        "their transcript)",
    )
    _add_chat_options(sv)
    sv.add_argument(
        "--faults",
        metavar="FILE",
        help="JSON list of faults armed on every connection, for testing clients "
        "(docs/server.md, fault injection)",
    )
    sv.set_defaults(func=_serve)


def _add_talk(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tk = sub.add_parser(
        "talk",
        help="talk with an agent through the microphone and speaker (Ctrl-C ends)",
        description="Talks with an agent through the microphone and speaker, printing the "
        "transcript as it goes; Ctrl-C ends. Needs PortAudio (voxwire[devices]); "
        "OPENAI_API_KEY for the hosted service, or --url for another endpoint.",
    )
    tk.add_argument(
        "--url",
        help="a Realtime endpoint (ws://... or wss://..., e.g. a `voxwire serve`) instead of the "
        "hosted service",
    )
    tk.add_argument("--input", metavar="DEV", help="microphone: index, name or part of a name")
    tk.add_argument("--output", metavar="DEV", help="speaker: index, name or part of a name")
    tk.add_argument("--json", action="store_true", help="print the events as JSON lines")
    tk.add_argument(
        "--aec",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="cancel the speaker's echo in the microphone (speakerphones, laptops without "
        "headphones; docs/audio-io.md); default: on when the microphone and the speaker are "
        "one device's, off for separate ones and anything worn on the head",
    )
    tk.set_defaults(func=_talk)


def _phone(args: argparse.Namespace) -> int:
    """Answer Twilio calls with an agent (voxwire/telephony/twilio/command.py)."""
    from voxwire.telephony.twilio import command

    server = command.phone_server(args)  # a bad agent or --config: status 2 before serving
    return until_stopped(
        lambda stop: command.serve(server, args, stop),
        f"voxwire phone: {args.host} port {args.port} is already in use: choose another with "
        "--port N, or --port 0 for a free one (the server prints it)",
        metrics_port=args.metrics_port,
    )


def _add_phone(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ph = sub.add_parser(
        "phone",
        help="answer Twilio calls with an agent (voice webhook + media stream on one port)",
        description="Set the Twilio number's voice webhook ('A call comes in') to "
        "PUBLIC_URL/twiml (HTTP POST or GET). OPENAI_API_KEY for the hosted service; "
        "TWILIO_AUTH_TOKEN to check Twilio's signatures (recommended on a public URL). "
        "docs/telephony.md",
    )
    ph.add_argument("agent", help="module:attribute, a RealtimeAgent (or a function returning one)")
    ph.add_argument("--url", help="a Realtime endpoint (e.g. `voxwire serve`), not the hosted one")
    ph.add_argument("--model", help="the Realtime model (hosted service)")
    ph.add_argument("--host", default="127.0.0.1", help="address to bind (loopback)")
    ph.add_argument("--port", type=port, default=8080, help="port (0: a free one)")
    ph.add_argument("--metrics-port", type=port, help=METRICS_HELP)
    ph.add_argument("--public-url", help="the https:// URL Twilio reaches this server at")
    ph.add_argument("--config", type=Path, help="session configuration, a JSON file")
    ph.add_argument(
        "--chunk-ms", type=int, default=40, help="agent audio per media message + mark (20..1000)"
    )
    first = ph.add_mutually_exclusive_group()
    first.add_argument(
        "--greet",
        action="store_true",
        help="the agent speaks first, as its instructions say (default: it waits for the caller)",
    )
    first.add_argument("--greeting", metavar="TEXT", help="the agent speaks first: these words")
    ph.set_defaults(func=_phone)


def _add_quickstart(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    qs = sub.add_parser(
        "quickstart",
        help="one offline spoken turn against the local server",
        description="Starts the local realtime server in-process, streams a spoken question "
        "(synthesised, or --wav) to it in 20 ms chunks, prints the turn's events as they happen "
        "and writes the spoken reply to --out.",
    )
    qs.add_argument(
        "--out",
        type=output_file,
        default=QUICKSTART_OUT,
        help="where to write the reply (checked before the turn runs)",
    )
    qs.add_argument("--pace", type=pace, default=4.0, help="audio speed, x real time (0: max)")
    qs.add_argument("--wav", help="the user's question as a 16-bit WAV (default: synthesised)")
    qs.add_argument(
        "--url",
        help="talk to this Realtime endpoint (ws://... or wss://...) instead of a local server "
        "started in-process; OPENAI_API_KEY is used if set",
    )
    qs.set_defaults(func=_quickstart)


def _add_chat_options(sv: argparse.ArgumentParser) -> None:
    sv.add_argument(
        "--chat-url",
        metavar="URL",
        help="answer with an OpenAI-compatible chat-completions endpoint (e.g. a local LLM "
        "server at http://127.0.0.1:8080/v1) instead of the scenario rules",
    )
    sv.add_argument("--chat-model", metavar="NAME", help="the model to ask (with --chat-url)")
    sv.add_argument(
        "--chat-key-env",
        metavar="VAR",
        help="send 'Authorization: Bearer <key>' to the chat endpoint, the key read from VAR",
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="voxwire",
        description="Realtime voice agents on the OpenAI Realtime protocol. Start with "
        "`voxwire demo` (offline); `voxwire COMMAND --help` says what each command does.",
    )
    p.add_argument("--version", action="version", version=f"voxwire {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    info = sub.add_parser(
        "info",
        help="show the build and self-check the audio core",
        description="Prints the version and the resampler kernel in use, and streams 1 s of "
        "noise through the resampler at common rates (after a warm-up), checking the sample "
        "count and timing it. Exit status 1 if a check fails.",
    )
    info.set_defaults(func=_info)
    rs = sub.add_parser(
        "resample",
        help="resample a 16-bit WAV file to another rate (mono)",
        description="Reads a 16-bit PCM WAV file (any rate, any channels), mixes it down to mono "
        "and resamples it with the Rust core to --rate, aligned in time with the input (the "
        "filter delay removed unless --keep-delay).",
    )
    rs.add_argument("input")
    rs.add_argument("output")
    rs.add_argument("--rate", type=int, required=True, help="output rate in Hz")
    rs.add_argument(
        "--quality", choices=("fast", "hq", "vhq"), default="hq", help="resampler preset"
    )
    rs.add_argument("--keep-delay", action="store_true", help="keep the filter delay at the start")
    rs.set_defaults(func=_resample)
    _add_demo(sub)
    _add_web(sub)
    _add_talk(sub)
    bn = sub.add_parser(
        "bench",
        help="a quick table of the audio path's costs (a few seconds)",
        description="Times the audio path on this machine per 20 ms chunk (median over rounds): "
        "the resampler (against python-soxr when installed), the ring, a delta to playable "
        "audio, G.711. A first look; the figures of record come from benches/.",
    )
    bn.add_argument(
        "--rounds", type=positive, default=15, help="timed rounds per figure (median; >= 1)"
    )
    bn.add_argument("--report", metavar="HTML", help="also draw the figures in this HTML file")
    bn.set_defaults(func=_bench)
    _add_serve(sub)
    _add_phone(sub)
    _add_quickstart(sub)
    for command in sub.choices.values():
        command.formatter_class = ShowDefaults
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        # Ctrl-C: one line, and the shell's status for SIGINT (128 + 2), not a traceback.
        print(f"voxwire {args.command}: interrupted", file=sys.stderr)
        return 130
    except (ValueError, TypeError, OSError) as e:
        print(f"voxwire: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
