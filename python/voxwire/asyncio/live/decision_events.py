"""The Decisions events a :class:`~voxwire.asyncio.live.LiveSession` hands the application."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from voxwire.live.decisions import Decision

__all__ = ["DecisionItemEvent", "LiveDecisionEvent"]


@dataclass(frozen=True, kw_only=True, slots=True)
class LiveDecisionEvent:
    """A decision of the Decisions API (``decision.event``): for a delegation of the model
    (``delegation_id``; ``requested`` when the application asked with
    ``session.decisions.decide()``), or for a transcript trigger (``trigger_id``, and
    ``source_event_id``: the transcript delta that fired it)."""

    type: Literal["live_decision"] = field(default="live_decision", init=False)
    decision: Decision
    delegation_id: str | None
    trigger_id: str | None = None
    source_event_id: str | None = None
    requested: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class DecisionItemEvent:
    """The server confirmed a decision item: ``created`` (``item`` as stored, with its id) or
    ``deleted``."""

    type: Literal["decision_item"] = field(default="decision_item", init=False)
    action: Literal["created", "deleted"]
    item_id: str
    item: Mapping[str, Any] | None = None
