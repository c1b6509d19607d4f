"""The session's usage wiring: the wire's audio rates and the model's prices, read from the
protocol core's view of the server session (see :class:`.metrics.UsageWiring`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from voxwire.asyncio.observability.metrics import UsageWiring
from voxwire.asyncio.observability.pricing import ModelPrices, price_table, prices_for
from voxwire.asyncio.observability.records import ResponseMetrics, SessionMetrics
from voxwire.protocol.config import AudioConfig, AudioFormat, AudioInputConfig, SessionConfig
from voxwire.protocol.units import PCM16_24K, SampleFormat

__all__ = ["session_usage_wiring"]


def _rate(fmt: SampleFormat) -> int:
    return fmt.sample_rate_hz * fmt.bytes_per_sample


def input_sample_format(session: SessionConfig | None) -> SampleFormat:
    """The audio the client sends (PCM16 24 kHz unless set)."""
    if session is not None and isinstance(session.audio, AudioConfig):
        inp = session.audio.input
        if isinstance(inp, AudioInputConfig) and isinstance(inp.format, AudioFormat):
            return inp.format.sample_format
    return PCM16_24K


def session_usage_wiring(
    session: Callable[[], SessionConfig | None],
    model: str | None,
    prices: Mapping[str, ModelPrices] | None,
    updated: Callable[[ResponseMetrics, SessionMetrics], None],
) -> UsageWiring:
    """Usage for a Realtime session: rates and model from ``session()`` (the server's view of
    the session, ``None`` before ``session.created``), ``model`` when the server names none,
    the published prices with ``prices`` over them."""
    table = price_table(prices)

    def bytes_per_s() -> tuple[int, int]:
        config = session()
        out = config.output_sample_format if config is not None else PCM16_24K
        return _rate(input_sample_format(config)), _rate(out)

    def model_prices() -> ModelPrices | None:
        config = session()
        named = config.model if config is not None else None
        return prices_for(named if isinstance(named, str) else model, table)

    return UsageWiring(bytes_per_s=bytes_per_s, prices=model_prices, updated=updated)
