"""What a session costs, estimated from its usage and a price table.

The Realtime API bills tokens per response, by modality (text, audio, image), with a lower price
for cached input tokens (a part of the input tokens, ``cached_tokens_details`` says of which
modality); GPT-Live bills the session's duration per second, at an active and a standby rate.
:data:`PUBLISHED_PRICES` holds the prices OpenAI published for the models named there, with the
page and the day they were read; a model missing from it has no estimate (``None``), never a
guessed one. Prices change: pass your own table (``RealtimeSession(prices=...)``,
``LiveSession(prices=...)``), merged over the published one.

The estimate is what the server reported priced by the table — it is not the bill (the
service may round, and bills input transcription and a Live session's backend separately).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Protocol, TypeAlias

from voxwire.asyncio.observability.records import TokenUsage

__all__ = [
    "PUBLISHED_PRICES",
    "BilledTime",
    "DurationPrices",
    "LivePricing",
    "ModelPrices",
    "TokenPrices",
    "duration_cost_usd",
    "price_table",
    "prices_for",
    "token_cost_usd",
]

_PER_MILLION: Final = 1_000_000


@dataclass(frozen=True, kw_only=True, slots=True)
class TokenPrices:
    """A token-billed model's prices in US dollars per million tokens; ``source`` and
    ``as_of`` say where and when they were read."""

    text_input: float
    text_cached_input: float
    text_output: float
    audio_input: float
    audio_cached_input: float
    audio_output: float
    image_input: float = 0.0
    image_cached_input: float = 0.0
    source: str = ""
    as_of: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class DurationPrices:
    """A duration-billed model's prices (GPT-Live) in US dollars per minute of session."""

    active_per_minute: float
    standby_per_minute: float
    source: str = ""
    as_of: str = ""


ModelPrices: TypeAlias = TokenPrices | DurationPrices

_MODELS: Final = "https://developers.openai.com/api/docs/models/"
_READ: Final = "2026-11-27"

#: Published prices, by model name (dated snapshots of a model use its prices).
PUBLISHED_PRICES: Final[Mapping[str, ModelPrices]] = {
    "gpt-realtime-1.5": TokenPrices(
        text_input=4.0,
        text_cached_input=0.4,
        text_output=16.0,
        audio_input=32.0,
        audio_cached_input=0.4,
        audio_output=64.0,
        image_input=5.0,
        image_cached_input=0.5,
        source=_MODELS + "gpt-realtime-1.5",
        as_of=_READ,
    ),
    "gpt-realtime-2": TokenPrices(
        text_input=4.0,
        text_cached_input=0.4,
        text_output=24.0,
        audio_input=32.0,
        audio_cached_input=0.4,
        audio_output=64.0,
        image_input=5.0,
        image_cached_input=0.5,
        source=_MODELS + "gpt-realtime-2",
        as_of=_READ,
    ),
    "gpt-realtime-2.1-mini": TokenPrices(
        text_input=0.6,
        text_cached_input=0.06,
        text_output=2.4,
        audio_input=10.0,
        audio_cached_input=0.3,
        audio_output=20.0,
        image_input=0.8,
        image_cached_input=0.08,
        source=_MODELS + "gpt-realtime-2.1-mini",
        as_of=_READ,
    ),
    "gpt-live-1.1": DurationPrices(
        active_per_minute=0.05,
        standby_per_minute=0.02,
        source=_MODELS + "gpt-live-1.1",
        as_of=_READ,
    ),
}

_SNAPSHOT: Final = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def price_table(overrides: Mapping[str, ModelPrices] | None = None) -> dict[str, ModelPrices]:
    """The published prices with ``overrides`` (by model name) over them."""
    table = dict(PUBLISHED_PRICES)
    table.update(overrides or {})
    return table


def prices_for(model: str | None, table: Mapping[str, ModelPrices]) -> ModelPrices | None:
    """The prices of ``model`` (a dated snapshot, ``name-YYYY-MM-DD``, takes its name's)."""
    if model is None:
        return None
    found = table.get(model)
    if found is None:
        found = table.get(_SNAPSHOT.sub("", model))
    return found


def token_cost_usd(usage: TokenUsage, prices: TokenPrices) -> float:
    """``usage`` priced: cached input at the cached rate, the rest of the input and the output
    at their modality's rate. Cached tokens the server did not split by modality count as
    text."""
    split = (
        usage.input_cached_text_tokens
        + usage.input_cached_audio_tokens
        + usage.input_cached_image_tokens
    )
    cached_text = usage.input_cached_text_tokens + max(0, usage.input_cached_tokens - split)
    dollars = (
        max(0, usage.input_text_tokens - cached_text) * prices.text_input
        + cached_text * prices.text_cached_input
        + max(0, usage.input_audio_tokens - usage.input_cached_audio_tokens) * prices.audio_input
        + usage.input_cached_audio_tokens * prices.audio_cached_input
        + max(0, usage.input_image_tokens - usage.input_cached_image_tokens) * prices.image_input
        + usage.input_cached_image_tokens * prices.image_cached_input
        + usage.output_text_tokens * prices.text_output
        + usage.output_audio_tokens * prices.audio_output
    )
    return dollars / _PER_MILLION


def duration_cost_usd(
    seconds: float,
    prices: DurationPrices,
    *,
    active_seconds: float | None = None,
    standby_seconds: float | None = None,
) -> float:
    """A Live session's billed time priced: active and standby seconds at their rates when the
    server split them, else all of ``seconds`` at the active rate."""
    if active_seconds is None and standby_seconds is None:
        return seconds * prices.active_per_minute / 60
    return (
        (active_seconds or 0) * prices.active_per_minute
        + (standby_seconds or 0) * prices.standby_per_minute
    ) / 60


class BilledTime(Protocol):
    """What a Live session's usage says of its time (``voxwire.live.SessionUsage``)."""

    @property
    def seconds(self) -> float: ...

    @property
    def active_seconds(self) -> int | None: ...

    @property
    def paused_seconds(self) -> int | None: ...


class LivePricing:
    """A Live session's prices: ``model``'s from the published table with ``overrides`` over
    it; :meth:`cost` prices the time the server reported (``None``: no price for the model,
    or it is billed by tokens) and keeps the last figure (``cost_usd``)."""

    def __init__(self, model: str, overrides: Mapping[str, ModelPrices] | None = None) -> None:
        found = prices_for(model, price_table(overrides))
        self.prices = found if isinstance(found, DurationPrices) else None
        self.cost_usd: float | None = None

    def cost(self, usage: BilledTime) -> float | None:
        if self.prices is None:
            return None
        self.cost_usd = duration_cost_usd(
            usage.seconds,
            self.prices,
            active_seconds=usage.active_seconds,
            standby_seconds=usage.paused_seconds,
        )
        return self.cost_usd
