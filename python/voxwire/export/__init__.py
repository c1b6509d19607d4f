"""Metrics export: a session's figures to OpenTelemetry metrics and a Prometheus endpoint
(docs/operations.md, "Metrics export"). Optional: ``pip install "voxwire[metrics]"``.

``MetricsExport([sinks])`` holds the backends; ``export.session()`` gives each session an
observer fed with the session's events. :mod:`.instruments` lists what is exported.
"""

from __future__ import annotations

from voxwire.export.instruments import INSTRUMENTS, Instrument
from voxwire.export.observer import MetricsExport, SessionObserver, Sink

__all__ = ["INSTRUMENTS", "Instrument", "MetricsExport", "SessionObserver", "Sink"]
