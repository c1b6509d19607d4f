"""What the demo's conversation is: two agents, a tool, the local server's scenario, and the
user's spoken lines (synthesised offline into WAV files).

The agents' instructions are real prompts, so the same conversation also makes sense to a real
model (``voxwire demo --url``). The local server answers from :data:`SCENARIO`, whose rules
are scoped by the agent speaking (its instructions) and by what came last (a tool output, a
handoff), not by the user's words: the demo needs no speech recognition, only a voice.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from voxwire.agents import RealtimeAgent, function_tool
from voxwire.audio import write_wav
from voxwire.quickstart import USER_VOICE_HINT
from voxwire.server import NoVoiceError, Scenario

__all__ = [
    "RATE_HZ",
    "SCENARIO",
    "USER_LINES",
    "UserLine",
    "agents",
    "lookup_order",
    "synthesise_lines",
]

RATE_HZ: Final = 24_000


@function_tool
async def lookup_order(order_id: str) -> dict[str, str]:
    """Look up where a customer's order is.

    Args:
        order_id: the order number the customer gave.
    """
    return {"order_id": order_id, "status": "shipped on Monday", "arrives": "tomorrow morning"}


def agents() -> RealtimeAgent:
    """The concierge (a tool and a handoff to billing); billing answers after the handoff."""
    billing = RealtimeAgent(
        name="Billing",
        instructions="You are the billing desk of an online shop. Explain charges and refunds "
        "clearly and in detail.",
        handoff_description="Charges, invoices and refunds.",
    )
    return RealtimeAgent(
        name="Concierge",
        instructions="You are the concierge of an online shop. Look orders up with the "
        "lookup_order tool, then pass anything about payments to the billing desk.",
        tools=[lookup_order],
        handoffs=[billing],
    )


BILLING_EXPLAINS: Final = (
    "Billing desk here. I can see two payments of thirty two euros for order forty two, "
    "one on Monday morning and one on Monday evening. The second one is a duplicate caused by "
    "a retry at the payment provider, so I have started a refund for it right away. You will "
    "get a confirmation email within the hour, and your bank statement will show the refund "
    "as a separate line, not as a change to the original payment."
)

SCENARIO: Final = Scenario.from_mapping(
    {
        "rules": [
            {
                "instructions": "concierge",
                "call": {"name": "lookup_order", "arguments": {"order_id": "42"}},
            },
            {
                "instructions": "concierge",
                "after_tool": "lookup_order",
                "say": "Order {output.order_id} {output.status} and arrives {output.arrives}. "
                "For the double charge, let me pass you to our billing desk.",
                "handoff": "Billing",
            },
            {"instructions": "billing", "after_handoff": "Billing", "say": BILLING_EXPLAINS},
            {
                "instructions": "billing",
                "say": "About five working days. It depends on your bank. Anything else?",
            },
        ],
        "fallback": "Sorry, I did not get that.",
    }
)


@dataclass(frozen=True)
class UserLine:
    """A line the user speaks; ``barge_in_after_ms``: spoken over the agent once this much of
    the agent's first reply after the handoff has been heard (``None``: when it is quiet)."""

    text: str
    barge_in_after_ms: int | None = None


USER_LINES: Final = (
    UserLine("Hi! My order forty two has not arrived yet, and I think I was charged twice."),
    UserLine("Sorry, how long will the refund take?", barge_in_after_ms=3000),
)

# The user's voice: another voice than the agent's, so the two are told apart.
_USER_VOICE: Final = "echo"


def synthesise_lines(
    lines: tuple[UserLine, ...], directory: Path, engine: str = "auto", voice: str = _USER_VOICE
) -> list[Path]:
    """Speak each line with the local server's voice engine (in ``voice``) into ``directory``
    as 24 kHz mono WAV files (``{voice}-1.wav`` ...); returns their paths."""
    # Imported here: only the demo's synthesis needs the voice engine.
    from voxwire.server.engines.tts import Voice

    try:
        engine_voice = Voice.load(engine)
    except NoVoiceError as exc:
        raise NoVoiceError(USER_VOICE_HINT, exc.reason) from None
    paths = []
    try:
        for number, line in enumerate(lines, 1):
            spoken = engine_voice.speak_blocking(line.text, voice, 1.0, "audio/pcm")
            path = directory / f"{voice}-{number}.wav"
            write_wav(path, np.frombuffer(spoken.audio, dtype="<i2").astype(np.int16), RATE_HZ)
            paths.append(path)
    finally:
        engine_voice.close()
    return paths


def session_config(silence_ms: int) -> dict[str, Any]:
    """Server VAD that waits ``silence_ms`` of silence before ending the user's turn (a pause
    between words must not end it), answering and interrupting by itself."""
    detection = {
        "type": "server_vad",
        "silence_duration_ms": silence_ms,
        "create_response": True,
        "interrupt_response": True,
    }
    return {"audio": {"input": {"turn_detection": detection}}}
