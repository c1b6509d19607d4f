"""Tracing: the service's ``session.tracing`` sent once at start, and OpenTelemetry spans
(recorded with the SDK's in-memory exporter, the session given its own tracer provider)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from msgspec import UNSET
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.observability.tracing import SessionTracer, tracing_setting
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import TracingConfig
from voxwire.testing import ScriptedServer

from .helpers import MANUAL, run, serving, settle


def recorder() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


# --- the service's tracing setting -----------------------------------------------------------


def test_tracing_setting_from_the_options() -> None:
    assert tracing_setting(UNSET) == "auto"
    assert tracing_setting(UNSET, tracing_disabled=True) is None
    assert tracing_setting(None) is None  # the configuration said off
    assert tracing_setting(UNSET, workflow_name="support") == TracingConfig(workflow_name="support")
    assert tracing_setting(
        "auto", workflow_name="w", group_id="g", metadata={"user": "u1"}
    ) == TracingConfig(workflow_name="w", group_id="g", metadata={"user": "u1"})
    with pytest.raises(ConfigurationError, match="contradicts"):
        tracing_setting(UNSET, tracing_disabled=True, workflow_name="w")
    with pytest.raises(ConfigurationError, match="group_id"):
        tracing_setting(UNSET, group_id="")
    with pytest.raises(ConfigurationError, match="metadata"):
        tracing_setting(UNSET, metadata={1: "x"})  # type: ignore[dict-item]


def test_the_server_gets_the_tracing_settings_in_the_first_update() -> None:
    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(
                url=server.url(),
                config=MANUAL,
                wait_for_session_updated=True,
                workflow_name="support",
                group_id="customer-42",
                metadata={"channel": "phone"},
            ) as session,
        ):
            assert session.protocol.session is not None
            assert session.protocol.session.tracing == TracingConfig(
                workflow_name="support", group_id="customer-42", metadata={"channel": "phone"}
            )

    run(body())


def test_tracing_is_auto_by_default_and_off_when_disabled() -> None:
    async def body() -> None:
        async with serving() as server:
            for options, expected in (({}, "auto"), ({"tracing_disabled": True}, None)):
                async with RealtimeSession(
                    url=server.url(), config=MANUAL, wait_for_session_updated=True, **options
                ) as session:
                    assert session.protocol.session is not None
                    assert session.protocol.session.tracing == expected

    run(body())


def test_tracing_is_sent_once_and_kept_out_of_later_updates() -> None:
    async def body() -> None:
        server = ScriptedServer()
        async with RealtimeSession(
            connector=server.connect,
            config={**MANUAL, "tracing": {"workflow_name": "from-config"}},
        ) as session:
            await session.update_session({"instructions": "Be brief."})
            await server.wait_for("session.update", count=2)
        first, second = [e for e in server.sent if e["type"] == "session.update"]
        assert first["session"]["tracing"] == {"workflow_name": "from-config"}
        assert "tracing" not in second["session"]

    run(body())


# --- client spans --------------------------------------------------------------------------


def test_spans_for_the_session_and_each_response() -> None:
    provider, exporter = recorder()

    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(
                url=server.url(),
                config=MANUAL,
                tracer_provider=provider,
                workflow_name="support",
            ) as session,
        ):
            await session.send_message("hello")
            await settle(session)
            await session.send_message("story")
            await settle(session)

    run(body())
    spans = exporter.get_finished_spans()
    (session_span,) = by_name(spans, "voxwire.realtime.session")
    responses = by_name(spans, "voxwire.realtime.response")
    assert len(responses) == 2
    assert session_span.attributes is not None
    assert session_span.attributes["voxwire.workflow_name"] == "support"
    assert session_span.attributes["voxwire.close_reason"] == "client_closed"
    assert session_span.status.status_code is StatusCode.UNSET
    for span in responses:
        assert span.parent is not None
        assert span.parent.span_id == session_span.context.span_id
        assert span.attributes is not None
        assert span.attributes["voxwire.response.status"] == "completed"
        assert span.attributes["gen_ai.usage.output_tokens"] > 0  # type: ignore[operator]
        assert span.start_time is not None
        assert span.end_time is not None
        assert span.start_time <= span.end_time


def test_tool_and_handoff_spans_are_children_of_the_session() -> None:
    provider, exporter = recorder()

    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(url=server.url(), config=MANUAL, tracer_provider=provider) as session,
        ):
            tracer = session.tracer
            assert tracer.enabled
            with tracer.tool_span("get_weather", "call_1"):
                pass
            with pytest.raises(RuntimeError), tracer.tool_span("broken", "call_2"):
                raise RuntimeError("the tool failed")
            with tracer.handoff_span("triage", "billing"):
                pass

    run(body())
    spans = exporter.get_finished_spans()
    (session_span,) = by_name(spans, "voxwire.realtime.session")
    tools = by_name(spans, "voxwire.realtime.tool")
    (handoff,) = by_name(spans, "voxwire.realtime.handoff")
    assert [(t.attributes or {}).get("voxwire.tool.call_id") for t in tools] == [
        "call_1",
        "call_2",
    ]
    assert tools[0].status.status_code is StatusCode.UNSET
    assert tools[1].status.status_code is StatusCode.ERROR
    assert [e.name for e in tools[1].events] == ["exception"]
    assert (handoff.attributes or {}).get("voxwire.handoff.to_agent") == "billing"
    for span in (*tools, handoff):
        assert span.parent is not None
        assert span.parent.span_id == session_span.context.span_id


def test_a_failed_connection_ends_the_session_span_with_an_error() -> None:
    provider, exporter = recorder()

    async def body() -> None:
        session = RealtimeSession(
            url="ws://127.0.0.1:9/v1/realtime", tracer_provider=provider, open_timeout_s=2
        )
        with pytest.raises(ConnectionError):
            await session.connect()

    run(body())
    (span,) = exporter.get_finished_spans()
    assert span.name == "voxwire.realtime.session"
    assert span.status.status_code is StatusCode.ERROR


def test_tracing_disabled_makes_no_span() -> None:
    provider, exporter = recorder()

    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(
                url=server.url(), config=MANUAL, tracer_provider=provider, tracing_disabled=True
            ) as session,
        ):
            assert not session.tracer.enabled
            with session.tracer.tool_span("get_weather", "call_1"):
                pass
            await session.send_message("hello")
            await settle(session)

    run(body())
    assert exporter.get_finished_spans() == ()


def test_without_opentelemetry_the_tracer_is_off() -> None:
    """In a fresh interpreter where ``opentelemetry`` cannot be imported."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["opentelemetry"] = None  # makes `import opentelemetry` raise ImportError
        from voxwire.asyncio.observability.tracing import OPENTELEMETRY_AVAILABLE, SessionTracer
        tracer = SessionTracer()
        assert not OPENTELEMETRY_AVAILABLE and not tracer.enabled
        tracer.session_started()
        with tracer.tool_span("t", "c"), tracer.handoff_span("a", "b"):
            pass
        tracer.session_ended("client_closed")
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_an_enabled_tracer_outside_a_session_still_records_tool_spans() -> None:
    provider, exporter = recorder()
    tracer = SessionTracer(tracer_provider=provider)
    with tracer.tool_span("lookup", "call_9"):
        pass
    (span,) = exporter.get_finished_spans()
    assert span.name == "voxwire.realtime.tool"
    assert span.parent is None
