"""The process's metrics export, for the serving commands (``voxwire serve``, ``web``,
``phone`` with ``--metrics-port``): one :class:`~voxwire.export.MetricsExport` to a Prometheus
endpoint on 127.0.0.1 (and to OpenTelemetry's global meter provider when opentelemetry-api is
installed), and the hooks the commands feed their sessions' events through. Without
``--metrics-port`` nothing is exported and the hooks do nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from voxwire.export.observer import MetricsExport, SessionObserver, Sink
from voxwire.export.prometheus import PrometheusSink, serve_metrics
from voxwire.protocol import server_events as se

__all__ = ["call_ended", "observe", "observe_call", "observe_server", "running", "start", "stop"]

_state: dict[str, Any] = {}
#: One observer per session while it runs, by the session (or the call's sid, or the served
#: connection); dropped when it ends.
_observers: dict[Any, SessionObserver] = {}


def start(port: int, host: str = "127.0.0.1") -> int:
    """Serve the process's metrics on ``host:port`` (0: a free port); the port."""
    prometheus = PrometheusSink()
    sinks: list[Sink] = [prometheus]
    try:
        from voxwire.export.otel import OpenTelemetrySink

        sinks.append(OpenTelemetrySink())
    except ImportError:  # OpenTelemetry is optional: Prometheus alone then
        pass
    server, bound = serve_metrics(prometheus, port, host)
    _state.update(export=MetricsExport(sinks), server=server)
    return bound


def stop() -> None:
    """Stop serving (the samples are gone with the registry)."""
    server = _state.pop("server", None)
    _state.pop("export", None)
    if server is not None:
        server.shutdown()
        server.server_close()


def running() -> MetricsExport | None:
    export: MetricsExport | None = _state.get("export")
    return export


def observe(session: Any, event: Any, kind: str = "realtime") -> None:
    """Account for ``event`` of ``session`` (its observer made at its first event)."""
    export = running()
    if export is None:
        return
    observer = _observers.get(session)
    if observer is None:
        observer = _observers[session] = export.session(kind)
    observer.observe(event)
    if getattr(event, "type", None) == "close":
        _observers.pop(session, None)


async def observe_call(call: Any, session: Any, event: Any) -> None:
    """:func:`observe` in the shape of ``TwilioBridge(on_event=)``, by the call's sid (the
    bridge stops reading a session's events when the call ends: :func:`call_ended` counts it)."""
    observe(call.call_sid, event)


def call_ended(report: Any) -> None:
    """``PhoneServer(on_call_ended=)``: the call's session ended (``reason="call_ended"``)."""
    call = report.call
    observer = _observers.pop(call.call_sid, None) if call is not None else None
    if observer is not None:
        observer.end("call_ended")


def observe_server(connection: Any, events: Sequence[Any] | None) -> None:
    """``RealtimeServer(observer=)`` for ``voxwire serve``: each connection a session of kind
    ``server``, its ``response.done`` usage counted; ``None``: the connection ended."""
    export = running()
    if export is None:
        return
    observer = _observers.get(connection)
    if observer is None:
        observer = _observers[connection] = export.session("server")
    if events is None:
        observer.end("connection_ended")
        _observers.pop(connection, None)
        return
    for event in events:
        if isinstance(event, se.ResponseDone):
            observer.served(event)
