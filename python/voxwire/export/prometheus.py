"""The export's Prometheus backend (``prometheus-client``) and its HTTP endpoint.

Several worker processes (``voxwire phone`` behind a process manager, gunicorn-style): set
``PROMETHEUS_MULTIPROC_DIR`` to an empty directory shared by the workers before they start, as
prometheus-client's multiprocess mode asks; each worker writes its samples there and the
endpoint (:func:`serve_metrics`) sums them. Without it, one process serves its own. Needs
``prometheus-client`` (``pip install "voxwire[metrics]"``).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from voxwire.export.instruments import INSTRUMENTS
from voxwire.export.observer import Labels

__all__ = ["PrometheusSink", "multiprocess", "serve_metrics"]


def _client() -> Any:
    try:
        import prometheus_client
    except ImportError as exc:
        raise ImportError(
            "the Prometheus endpoint needs prometheus-client: pip install 'voxwire[metrics]'"
        ) from exc
    return prometheus_client


def multiprocess() -> bool:
    """prometheus-client's multiprocess mode is on (``PROMETHEUS_MULTIPROC_DIR`` is set)."""
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


class PrometheusSink:
    """Every instrument of the table as a Prometheus metric in ``registry`` (default: a new
    one; in multiprocess mode the samples go to the shared directory instead)."""

    def __init__(self, registry: Any = None) -> None:
        client = _client()
        self.registry = registry if registry is not None else client.CollectorRegistry()
        self._metrics: dict[str, Any] = {}
        self._gauges = {spec.name for spec in INSTRUMENTS if spec.kind == "updown"}
        for spec in INSTRUMENTS:
            common: dict[str, Any] = {"labelnames": spec.labels, "registry": self.registry}
            if spec.kind == "counter":
                made: Any = client.Counter(spec.name, spec.description, **common)
            elif spec.kind == "updown":
                # livesum: the workers alive now, summed (a dead worker's sessions are gone).
                made = client.Gauge(
                    spec.name, spec.description, multiprocess_mode="livesum", **common
                )
            else:
                made = client.Histogram(spec.name, spec.description, buckets=spec.buckets, **common)
            self._metrics[spec.name] = made

    def _child(self, name: str, labels: Labels) -> Any:
        metric = self._metrics[name]
        return metric.labels(**labels) if labels else metric

    def add(self, name: str, value: float, labels: Labels) -> None:
        if value > 0 or (value < 0 and name in self._gauges):  # counters only go up
            self._child(name, labels).inc(value)

    def record(self, name: str, value: float, labels: Labels) -> None:
        self._child(name, labels).observe(value)


def serve_metrics(sink: PrometheusSink, port: int, host: str = "127.0.0.1") -> tuple[Any, int]:
    """Serve ``/metrics`` on ``host:port`` (0: a free port) in a daemon thread; returns the
    server (``shutdown()`` stops it) and the port. In multiprocess mode it sums every worker's
    samples from the shared directory."""
    client = _client()
    registry = sink.registry
    if multiprocess():
        mp: Any = importlib.import_module("prometheus_client.multiprocess")
        registry = client.CollectorRegistry()
        mp.MultiProcessCollector(registry)
    server, _thread = client.start_http_server(port, addr=host, registry=registry)
    return server, server.server_address[1]
