"""Metrics export: a session against the local server, read back through OpenTelemetry's
in-memory reader and by scraping the Prometheus endpoint over HTTP on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("prometheus_client")
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client.parser import text_string_to_metric_families

import voxwire.asyncio.events as ev
from tests.children import child_env
from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.observability.metrics import InterruptionMetrics
from voxwire.asyncio.observability.pricing import PUBLISHED_PRICES
from voxwire.exceptions import LeaseLost
from voxwire.export import INSTRUMENTS, MetricsExport
from voxwire.export.otel import OpenTelemetrySink
from voxwire.export.prometheus import PrometheusSink, serve_metrics

from .asyncio.helpers import AUDIO_MANUAL, run, serving, speech_pcm, until

PRICES = PUBLISHED_PRICES["gpt-realtime-1.5"]


@function_tool
async def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temperature": 21}


def otel_points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    found: dict[str, list[Any]] = {}
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def otel_sum(points: dict[str, list[Any]], name: str, **labels: str) -> float:
    return sum(
        p.value for p in points.get(name, []) if labels.items() <= dict(p.attributes).items()
    )


def scrape(port: int) -> dict[str, float]:
    """The endpoint's samples over HTTP: ``name{labels}`` -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = sample.name + "".join(f",{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[key] = sample.value
    return samples


def test_a_session_against_the_local_server_is_exported_to_both_backends() -> None:
    reader = InMemoryMetricReader()
    prometheus = PrometheusSink()
    export = MetricsExport([OpenTelemetrySink(MeterProvider(metric_readers=[reader])), prometheus])
    http, port = serve_metrics(prometheus, 0)
    agent = RealtimeAgent(name="Weather", tools=[get_weather])

    async def body() -> ev.UsageUpdatedEvent:
        async with serving(tts="espeak") as server:
            session = RealtimeSession(
                agent,
                url=server.url(model="priced"),
                config=AUDIO_MANUAL,
                prices={"priced": PRICES},
            )
            observer = export.session()
            await session.connect()
            usage: list[ev.UsageUpdatedEvent] = []

            def counted(n: int) -> Any:
                def check(event: ev.SessionEvent) -> bool:
                    observer.observe(event)
                    if isinstance(event, ev.UsageUpdatedEvent):
                        usage.append(event)
                    return len(usage) == n

                return check

            # A spoken turn, answered ...
            await session.send_audio(speech_pcm(), commit=True)
            await session.create_response()
            await until(session, counted(1), timeout_s=30)
            # ... then a typed one: the model calls the tool, then answers with its output.
            await session.send_message("What is the weather like?")
            await until(session, counted(3), timeout_s=30)
            await session.close()
            async for event in session:  # the rest, close last
                observer.observe(event)
            return usage[-1]

    try:
        last = run(body())
        points = otel_points(reader)
        samples = scrape(port)
    finally:
        http.shutdown()
    totals = last.totals
    tokens = totals.usage
    assert otel_sum(points, "voxwire_sessions_started") == 1
    assert otel_sum(points, "voxwire_sessions_active") == 0
    assert otel_sum(points, "voxwire_sessions_ended", reason="client_closed") == 1
    assert otel_sum(points, "voxwire_responses") == totals.responses == 3
    assert otel_sum(points, "voxwire_user_turns") == 1
    assert otel_sum(points, "voxwire_tool_calls", outcome="ok") == 1
    assert otel_sum(points, "voxwire_tokens", direction="output", modality="audio") == (
        tokens.output_audio_tokens
    )
    assert otel_sum(points, "voxwire_tokens", direction="input", modality="cached_audio") == (
        tokens.input_cached_audio_tokens
    )
    assert otel_sum(points, "voxwire_audio_seconds", direction="in") == pytest.approx(
        totals.input_audio_s
    )
    assert otel_sum(points, "voxwire_estimated_cost_usd") == pytest.approx(
        totals.estimated_cost_usd
    )
    (ttfa,) = points["voxwire_time_to_first_audio_seconds"]
    assert ttfa.count == 2  # the call has no audio
    assert ttfa.sum == pytest.approx(totals.time_to_first_audio.total_s)
    (tool_latency,) = points["voxwire_tool_latency_seconds"]
    assert tool_latency.count == 1
    speech = [p for p in points["voxwire_speech_end_to_audio_seconds"]]
    assert [dict(p.attributes) for p in speech] == [{"stage": "received"}]
    # The same figures scraped over HTTP.
    assert samples["voxwire_sessions_started_total,kind=realtime"] == 1
    assert samples["voxwire_sessions_active,kind=realtime"] == 0
    assert samples["voxwire_responses_total,kind=realtime,status=completed"] == 3
    assert samples["voxwire_tokens_total,direction=output,modality=audio"] == (
        tokens.output_audio_tokens
    )
    assert samples["voxwire_time_to_first_audio_seconds_count"] == 2
    assert samples["voxwire_tool_latency_seconds_count"] == 1
    assert samples["voxwire_estimated_cost_usd_total"] == pytest.approx(totals.estimated_cost_usd)


def test_every_instrument_is_fed_by_some_event() -> None:
    reader = InMemoryMetricReader()
    export = MetricsExport([OpenTelemetrySink(MeterProvider(metric_readers=[reader]))])
    observer = export.session("live")
    cut = InterruptionMetrics(
        item_id="i",
        content_index=0,
        response_id="r",
        played_ms=1200,
        received_ms=3000,
        dropped_ms=1800,
        clock_heard_ms=1200.4,
        truncation_error_ms=-0.4,
    )
    for event in (
        ev.MetricsCollectedEvent(metrics=cut),
        ev.InterruptionRecoveredEvent(reason="unconfirmed", transcript=None, paused_ms=300.0),
        ev.ReconnectedEvent(url="ws://x", items_restored=3),
        ev.ErrorEvent(message="taken", source="store", exception=LeaseLost("taken over")),
        ev.RenewedEvent(
            reason="max_duration",
            url="ws://x",
            old_session_id=None,
            new_session_id=None,
            switch_s=0.1,
            items_replayed=0,
        ),
    ):
        observer.observe(event)
    points = otel_points(reader)
    assert otel_sum(points, "voxwire_interruptions") == 1
    assert otel_sum(points, "voxwire_dropped_audio_ms") == 1800
    assert points["voxwire_truncation_error_ms"][0].sum == pytest.approx(0.4)
    assert otel_sum(points, "voxwire_false_interruptions_recovered", reason="unconfirmed") == 1
    assert otel_sum(points, "voxwire_reconnects") == 1
    assert otel_sum(points, "voxwire_errors", source="store") == 1
    assert otel_sum(points, "voxwire_store_lease_losses") == 1
    assert otel_sum(points, "voxwire_renewals") == 1
    assert {spec.name for spec in INSTRUMENTS} >= set(points)
    for spec in INSTRUMENTS:  # bounded labels: never an id
        assert not any(label.endswith("id") for label in spec.labels), spec.name


def test_labels_stay_bounded_over_many_sessions() -> None:
    prometheus = PrometheusSink()
    export = MetricsExport([prometheus])

    def series() -> set[tuple[str, tuple[tuple[str, str], ...]]]:
        return {
            (sample.name, tuple(sorted(sample.labels.items())))
            for metric in prometheus.registry.collect()
            for sample in metric.samples
        }

    def one_session() -> None:
        observer = export.session()
        observer.observe(ev.CloseEvent(reason="client_closed"))

    one_session()
    after_one = series()
    for _ in range(50):
        one_session()
    assert series() == after_one  # fifty more sessions, not one more series


SERVE = ("serve", "--no-audio", "--port", "0", "--metrics-port", "0")


def test_voxwire_serve_exports_its_sessions_with_metrics_port() -> None:
    """``voxwire serve --metrics-port 0``: a client's turn against it, then its endpoint
    scraped over HTTP (the server's sessions and the usage its ``response.done`` billed)."""
    child = subprocess.Popen(
        [sys.executable, "-u", "-m", "voxwire.cli", *SERVE],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        assert child.stdout is not None
        metrics_line = child.stdout.readline()
        server_line = child.stdout.readline()
        metrics_port = int(re.search(r"127\.0\.0\.1:(\d+)/metrics", metrics_line)[1])  # type: ignore[index]
        url = re.search(r"(ws://\S+/realtime)", server_line)[1]  # type: ignore[index]

        async def turn() -> ev.UsageUpdatedEvent:
            async with RealtimeSession(url=url, config={"output_modalities": ["text"]}) as s:
                await s.send_message("hello")
                events = await until(s, "usage_updated")
                return next(e for e in events if isinstance(e, ev.UsageUpdatedEvent))

        usage = run(turn()).response.usage
        samples: dict[str, float] = {}

        async def ended() -> None:  # the server counts the connection's end as it notices it
            while samples.get("voxwire_sessions_active,kind=server", 1) != 0:
                samples.update(scrape(metrics_port))
                await asyncio.sleep(0.05)

        run(ended(), timeout_s=10)
    finally:
        child.send_signal(signal.SIGTERM)
        child.communicate(timeout=30)
    assert child.returncode == 0
    assert samples["voxwire_sessions_started_total,kind=server"] == 1
    assert samples["voxwire_sessions_ended_total,kind=server,reason=connection_ended"] == 1
    assert samples["voxwire_responses_total,kind=server,status=completed"] == 1
    assert samples["voxwire_tokens_total,direction=output,modality=text"] == (
        usage.output_text_tokens
    )


PHONE = ("phone", "tests.telephony.twilio_helpers:AGENT", "--greeting", "Hello there.")


def exported_by_the_process(
    body: Callable[[int], Coroutine[Any, Any, dict[str, float]]],
) -> dict[str, float]:
    """``body(port)`` with the process's export on (``--metrics-port``) on a free port."""
    from voxwire.export import process

    port = process.start(0)
    try:
        return run(body(port), timeout_s=60)
    finally:
        process.stop()


def test_voxwire_phone_metrics_port_exports_each_calls_session() -> None:
    """``voxwire phone --metrics-port``'s server (built from the command's arguments) exports
    a simulated call's session: the agent greets, the caller hangs up."""
    from voxwire.cli import build_parser
    from voxwire.server import RealtimeServer
    from voxwire.telephony.twilio.command import phone_server
    from voxwire.testing import TwilioCallSimulator

    async def body(port: int) -> dict[str, float]:
        samples: dict[str, float] = {}
        async with RealtimeServer(tts="espeak") as server:
            args = build_parser().parse_args([*PHONE, "--url", server.url()])
            phone = phone_server(args)
            async with phone, TwilioCallSimulator(phone.url("/media", scheme="ws")) as call:
                await call.until(lambda: call.agent_samples_heard >= 4_000)
                # The bridge stops reading a call's events when the caller hangs up: the caller
                # stays on the line until the greeting's usage was exported.
                while "voxwire_tokens_total,direction=output,modality=audio" not in samples:
                    await asyncio.sleep(0.05)
                    samples = scrape(port)
            while samples.get("voxwire_sessions_active,kind=realtime", 1) != 0:
                await asyncio.sleep(0.05)
                samples = scrape(port)
            return samples

    samples = exported_by_the_process(body)
    assert samples["voxwire_sessions_started_total,kind=realtime"] == 1
    assert samples["voxwire_sessions_ended_total,kind=realtime,reason=call_ended"] == 1
    assert samples["voxwire_responses_total,kind=realtime,status=completed"] >= 1
    assert samples["voxwire_tokens_total,direction=output,modality=audio"] > 0


def test_voxwire_web_metrics_port_exports_each_tabs_session() -> None:
    """``voxwire web --metrics-port``: a tab's typed turn is exported (the bridge feeds the
    process's export every event of the tab's session)."""
    from tests.web.test_server import tab_at_48k

    async def body(port: int) -> dict[str, float]:
        samples: dict[str, float] = {}
        async with tab_at_48k() as (_, ws, chunks):
            await ws.send(json.dumps({"type": "text", "text": "hello"}))
            while "voxwire_responses_total,kind=realtime,status=completed" not in samples:
                with contextlib.suppress(TimeoutError):
                    message = await asyncio.wait_for(ws.recv(), 0.05)
                    if isinstance(message, bytes):
                        chunks.append(message)
                # The page plays what it received (metrics wait for the first sample heard).
                played = sum(len(c) - 8 for c in chunks) // 2
                await ws.send(json.dumps({"type": "played", "position": played}))
                samples = scrape(port)
        return samples

    samples = exported_by_the_process(body)
    assert samples["voxwire_sessions_started_total,kind=realtime"] == 1
    assert samples["voxwire_tokens_total,direction=output,modality=audio"] > 0


WORKER = """
import voxwire.asyncio.events as ev
from voxwire.export import MetricsExport
from voxwire.export.prometheus import PrometheusSink
export = MetricsExport([PrometheusSink()])
for _ in range({sessions}):
    export.session().observe(ev.CloseEvent(reason="client_closed"))
export.session()  # one still open when the worker exits
"""

ENDPOINT = """
import sys, time
from voxwire.export.prometheus import PrometheusSink, serve_metrics
server, port = serve_metrics(PrometheusSink(), 0)
print(port, flush=True)
sys.stdin.readline()
server.shutdown()
"""


def test_several_workers_share_one_endpoint_in_multiprocess_mode(tmp_path: Path) -> None:
    """prometheus-client's multiprocess mode: two worker processes' sessions summed by one
    endpoint serving the shared directory; a worker marked dead leaves the open-sessions gauge."""
    from prometheus_client import multiprocess

    env = child_env(PROMETHEUS_MULTIPROC_DIR=str(tmp_path))
    pids = []
    for sessions in (2, 3):
        worker = subprocess.Popen([sys.executable, "-c", WORKER.format(sessions=sessions)], env=env)
        assert worker.wait(60) == 0
        pids.append(worker.pid)
    endpoint = subprocess.Popen(
        [sys.executable, "-c", ENDPOINT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert endpoint.stdout is not None
        port = int(endpoint.stdout.readline())
        samples = scrape(port)
        for pid in pids:  # what a process manager's child-exit hook does (gunicorn's child_exit)
            multiprocess.mark_process_dead(pid, str(tmp_path))
        after = scrape(port)
    finally:
        endpoint.communicate("\n", timeout=30)
    assert samples["voxwire_sessions_started_total,kind=realtime"] == 2 + 3 + 2
    assert samples["voxwire_sessions_ended_total,kind=realtime,reason=client_closed"] == 5
    assert samples["voxwire_sessions_active,kind=realtime"] == 2  # one open in each worker
    assert after.get("voxwire_sessions_active,kind=realtime", 0) == 0
    assert after["voxwire_sessions_started_total,kind=realtime"] == 7  # counters stay
