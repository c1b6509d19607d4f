"""The metrics voxwire exports: one table, the same for every backend.

Names follow Prometheus' conventions (``_total`` on counters is added by the Prometheus client
itself; ``_seconds`` and ``_ms`` say the unit). Labels are bounded: no session, item, call or
conversation ids, no tool or agent names — only the small closed sets named here, so a fleet of
agents makes a fixed number of series.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["INSTRUMENTS", "LATENCY_BUCKETS_S", "TRUNCATION_BUCKETS_MS", "Instrument"]

Kind = Literal["counter", "updown", "histogram"]

#: Latency buckets (seconds): voice agents live between 0.2 and 2 s.
LATENCY_BUCKETS_S: Final = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
#: Truncation error buckets (ms, absolute: histograms take no negative values in
#: OpenTelemetry; the error is 0 to -1 ms when the claim is exact).
TRUNCATION_BUCKETS_MS: Final = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)


@dataclass(frozen=True, slots=True)
class Instrument:
    name: str
    kind: Kind
    unit: str
    description: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = LATENCY_BUCKETS_S


INSTRUMENTS: Final[tuple[Instrument, ...]] = (
    Instrument("voxwire_sessions_started", "counter", "1", "Sessions opened", ("kind",)),
    Instrument("voxwire_sessions_active", "updown", "1", "Sessions open now", ("kind",)),
    Instrument(
        "voxwire_sessions_ended", "counter", "1", "Sessions ended, by reason", ("kind", "reason")
    ),
    Instrument("voxwire_responses", "counter", "1", "Responses reported", ("kind", "status")),
    Instrument("voxwire_user_turns", "counter", "1", "Responses answering a user's turn"),
    Instrument(
        "voxwire_time_to_first_audio_seconds",
        "histogram",
        "s",
        "response.created to its first audio delta (the server's share)",
    ),
    Instrument(
        "voxwire_speech_end_to_audio_seconds",
        "histogram",
        "s",
        "End of the user's turn to the answer's first audio, received or played",
        ("stage",),
    ),
    Instrument(
        "voxwire_first_audio_to_played_seconds",
        "histogram",
        "s",
        "First audio received to its first sample played (the client's share)",
    ),
    Instrument("voxwire_interruptions", "counter", "1", "Items cut by an interruption"),
    Instrument(
        "voxwire_truncation_error_ms",
        "histogram",
        "ms",
        "How far the truncation claimed was from what the playback clock knew was heard",
        buckets=TRUNCATION_BUCKETS_MS,
    ),
    Instrument("voxwire_dropped_audio_ms", "counter", "ms", "Audio received never played (cut)"),
    Instrument(
        "voxwire_false_interruptions_recovered",
        "counter",
        "1",
        "Interruptions recovered as false (the agent resumed)",
        ("reason",),
    ),
    Instrument("voxwire_underruns", "counter", "1", "Times the audio output ran dry"),
    Instrument("voxwire_tool_calls", "counter", "1", "Function tool calls", ("outcome",)),
    Instrument(
        "voxwire_tool_latency_seconds", "histogram", "s", "Function tool call, start to end"
    ),
    Instrument("voxwire_guardrail_trips", "counter", "1", "Guardrails tripped", ("guardrail",)),
    Instrument("voxwire_reconnects", "counter", "1", "Connections lost and resumed"),
    Instrument("voxwire_errors", "counter", "1", "Error events, by where from", ("source",)),
    Instrument(
        "voxwire_store_lease_losses",
        "counter",
        "1",
        "Writes refused: another holder took the conversation's lease",
    ),
    Instrument("voxwire_renewals", "counter", "1", "Server sessions renewed before expiry"),
    Instrument(
        "voxwire_tokens",
        "counter",
        "1",
        "Tokens billed (response.done usage); cached: a part of input",
        ("direction", "modality"),
    ),
    Instrument("voxwire_audio_seconds", "counter", "s", "Audio sent and received", ("direction",)),
    Instrument("voxwire_live_billed_seconds", "counter", "s", "GPT-Live session time billed"),
    Instrument("voxwire_estimated_cost_usd", "counter", "USD", "Usage priced by the price table"),
)
