"""OpenTelemetry spans of a LiveSession (asyncio/live/spans.py), end to end against the local
server: a session span, a span per user turn with what was said and heard, a delegation span
under its turn, a tool span under its delegation; a reconnection span after a lost connection;
nothing with tracing disabled."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from voxwire.agents import RealtimeAgent
from voxwire.asyncio import ReconnectPolicy
from voxwire.asyncio.live import LiveReconnectedEvent, LiveSession
from voxwire.server.engines.transcribe import WhisperTranscriber

from .test_live_reconnect import behind_proxy, live_url, seen
from .test_live_session import WEATHER_AGENT, local_server, said, speak, until


def recorder() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == name]


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


@pytest.mark.skipif(
    not WhisperTranscriber.installed(), reason="needs the transcribe extra (faster-whisper)"
)
def test_session_turn_delegation_and_tool_spans() -> None:
    provider, exporter = recorder()

    async def body() -> None:
        async with (
            local_server() as url,
            LiveSession(WEATHER_AGENT, url=url, tracer_provider=provider) as session,
        ):
            await speak(session)
            await until(session, lambda events: "Paris." in said(events))

    asyncio.run(asyncio.wait_for(body(), 120))
    [session] = named(exporter, "voxwire.live.session")
    [turn] = named(exporter, "voxwire.live.turn")
    [delegation] = named(exporter, "voxwire.live.delegation")
    [tool] = named(exporter, "voxwire.live.tool")
    assert attrs(session)["voxwire.agent"] == "Weather"
    assert attrs(session)["gen_ai.request.model"] == "gpt-live-1"
    assert attrs(session)["voxwire.delegation"] == "responses"
    assert str(attrs(session)["voxwire.live.session_id"]).startswith("sess_")
    assert attrs(session)["voxwire.close_reason"] == "client_closed"
    assert parent_of(turn) == session.context.span_id
    assert "weather" in str(attrs(turn)["voxwire.turn.user_text"]).lower()
    assert attrs(turn)["voxwire.turn.assistant_heard"] == "It is 21 degrees in Paris."
    assert parent_of(delegation) == turn.context.span_id
    assert attrs(delegation)["voxwire.delegation.target"] == "responses"
    assert attrs(delegation)["voxwire.delegation.status"] == "completed"
    assert delegation.status.status_code is StatusCode.UNSET
    assert parent_of(tool) == delegation.context.span_id
    assert attrs(tool)["voxwire.tool.name"] == "get_weather"


async def _answer(request: Any) -> str:
    return "Done."


def test_a_reconnection_span_and_nothing_when_disabled() -> None:
    provider, exporter = recorder()
    agent = RealtimeAgent(name="Plain", instructions="Be brief.")

    async def body() -> None:
        async with behind_proxy(tts=None, transcriber=None) as (_, proxy):
            options: dict[str, Any] = {
                "url": live_url(proxy),
                "delegation": "client",
                "backend": _answer,
                "reconnect": ReconnectPolicy(attempts=3, backoff_s=0),
            }
            async with LiveSession(agent, tracer_provider=provider, **options) as session:
                proxy.cut()
                events = await until(session, seen(LiveReconnectedEvent))
                forked = events[-1].session_id
            async with LiveSession(
                agent, tracer_provider=provider, tracing_disabled=True, **options
            ) as quiet:
                await quiet.add_context("Hi.", spoken=True)
                await until(quiet, lambda events: "Hi." in said(events))
        [reconnect] = named(exporter, "voxwire.live.reconnect")
        assert attrs(reconnect)["voxwire.live.session_id"] == forked
        assert attrs(reconnect)["voxwire.reconnect.attempts"] >= 1
        assert str(attrs(reconnect)["voxwire.reconnect.lost_session_id"]).startswith("sess_")
        assert len(named(exporter, "voxwire.live.session")) == 1  # the disabled one made none

    asyncio.run(asyncio.wait_for(body(), 60))
