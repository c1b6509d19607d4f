"""The export's OpenTelemetry backend: every instrument of the table on a ``Meter``, so any
OpenTelemetry exporter (OTLP, Prometheus, the console) carries them. Needs ``opentelemetry-api``
(``pip install "voxwire[metrics]"``); without an SDK installed and configured the API's meter
does nothing, as OpenTelemetry intends."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from voxwire.export.instruments import INSTRUMENTS
from voxwire.export.observer import Labels

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider

__all__ = ["OpenTelemetrySink"]


class OpenTelemetrySink:
    """Instruments on ``meter_provider``'s meter ``voxwire`` (default: the global provider)."""

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        try:
            from opentelemetry import metrics
        except ImportError as exc:
            raise ImportError(
                "OpenTelemetry metrics need opentelemetry-api: pip install 'voxwire[metrics]'"
            ) from exc
        provider = meter_provider or metrics.get_meter_provider()
        meter = provider.get_meter("voxwire")
        self._instruments: dict[str, Any] = {}
        for spec in INSTRUMENTS:
            if spec.kind == "counter":
                made: Any = meter.create_counter(spec.name, spec.unit, spec.description)
            elif spec.kind == "updown":
                made = meter.create_up_down_counter(spec.name, spec.unit, spec.description)
            else:
                made = meter.create_histogram(
                    spec.name,
                    spec.unit,
                    spec.description,
                    explicit_bucket_boundaries_advisory=list(spec.buckets),
                )
            self._instruments[spec.name] = made

    def add(self, name: str, value: float, labels: Labels) -> None:
        self._instruments[name].add(value, dict(labels))

    def record(self, name: str, value: float, labels: Labels) -> None:
        self._instruments[name].record(value, dict(labels))
