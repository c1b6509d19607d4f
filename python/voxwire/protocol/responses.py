"""What the client knows about each response: status, output items, usage, interruption.

Records of responses that are over are kept for the :data:`FINISHED_KEPT` most recent ones only:
what reads them — the parts of a session handling ``response.done``, an interruption marking a
response whose audio still plays, a late or duplicated event — looks at recent responses, and a
session of many hours would otherwise keep one record per response it ever saw. Totals over all
responses live where they are needed (usage: the store's recorder; counts: metrics).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from voxwire.protocol.gate import ResponseSource
from voxwire.protocol.objects import Response, ResponseStatus, StatusDetails, Usage

__all__ = ["FINISHED_KEPT", "ResponseRecord", "ResponseRecords"]

#: Records of responses not in progress (done, or only heard of) kept, the most recent ones.
FINISHED_KEPT: Final = 64


@dataclass
class ResponseRecord:
    """One response, from ``response.created`` to ``response.done``."""

    id: str
    status: ResponseStatus | None = None
    """``in_progress`` from ``response.created`` on; ``None`` until then (events about a response
    can arrive before its start) and when ``response.done`` gave no readable status."""
    output_item_ids: list[str] = field(default_factory=list)
    status_details: StatusDetails | None = None
    usage: Usage | None = None
    cancel_sent: bool = False
    """A ``response.cancel`` for it went out (it is sent at most once)."""
    interrupted: bool = False
    """The client interrupted it: later deltas of it are dropped, not handed out."""
    speaks: bool = True
    """Its output may hold audio (``output_modalities`` of ``response.created`` name audio, or
    are not given): an output message of it that is interrupted with nothing heard is deleted."""
    out_of_band: bool = False
    """Created with ``conversation="none"``: it writes to no conversation and does not hold
    the response gate."""
    source: ResponseSource | None = None
    """Why it was asked for, from the request the gate resolved its ``response.created`` to;
    ``None`` for a response nobody here asked for (server VAD) and out-of-band ones."""
    tags: tuple[str, ...] = ()
    """The tags of the requests it answers (``send_response_create(tags=...)``); emptied if it
    turns out not to answer them (server VAD won the race: they are asked for again)."""

    @property
    def in_progress(self) -> bool:
        return self.status == "in_progress"


class ResponseRecords:
    """Responses by id, in the order they started: every one in progress and the
    :data:`FINISHED_KEPT` most recent others (see the module docstring)."""

    def __init__(self) -> None:
        self._records: dict[str, ResponseRecord] = {}
        self._over: dict[str, None] = {}  # ids of records not in progress, oldest first

    def get(self, response_id: str) -> ResponseRecord | None:
        return self._records.get(response_id)

    def all(self) -> list[ResponseRecord]:
        return list(self._records.values())

    def record(self, response_id: str) -> ResponseRecord:
        """The record for ``response_id``, made if events about it arrive before its start."""
        record = self._records.get(response_id)
        if record is None:
            record = self._records[response_id] = ResponseRecord(id=response_id)
            self._settled(response_id)
        return record

    def created(self, response_id: str) -> ResponseRecord:
        # response.created means the response started, whatever else its object says.
        record = self.record(response_id)
        record.status = "in_progress"
        self._over.pop(response_id, None)
        return record

    def output_item(self, response_id: str, item_id: str | None) -> None:
        record = self.record(response_id)
        if item_id is not None and item_id not in record.output_item_ids:
            record.output_item_ids.append(item_id)

    def done(self, response: Response, response_id: str) -> ResponseRecord:
        record = self.record(response_id)
        # A done response is over whatever its status says; "in_progress" here would be a
        # server bug, and treating it as over keeps the gate from waiting forever.
        record.status = response.status if response.status != "in_progress" else None
        record.status_details = response.status_details
        record.usage = response.usage
        for item in response.output:
            if item.id is not None and item.id not in record.output_item_ids:
                record.output_item_ids.append(item.id)
        self._settled(response_id)
        return record

    def _settled(self, response_id: str) -> None:
        """``response_id`` is not in progress: the most recent such records are kept."""
        self._over.pop(response_id, None)
        self._over[response_id] = None
        while len(self._over) > FINISHED_KEPT:
            oldest = next(iter(self._over))
            del self._over[oldest]
            del self._records[oldest]

    def is_interrupted(self, response_id: str) -> bool:
        record = self._records.get(response_id)
        return record is not None and record.interrupted
