"""What a new connection must do to go on where a lost one stopped — pure planning.

A Realtime server session lives as long as its websocket: when the connection is lost, the
conversation on the server is gone with it. :meth:`RealtimeProtocol.connection_lost` settles what
was in flight and returns a :class:`RestorationPlan`; the asyncio layer
(:mod:`voxwire.asyncio.connection.reconnect`) opens a new connection, recreates
:attr:`RestorationPlan.items` on it, and the new protocol core sends again what the lost server
never answered (:meth:`RealtimeProtocol.resend_unanswered`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from voxwire.exceptions import ConfigurationError
from voxwire.protocol.client_events import ConversationItemCreate
from voxwire.protocol.conversation import ROOT, ConversationState
from voxwire.protocol.gate import ResponseRequest
from voxwire.protocol.items import (
    ContentPart,
    FunctionCallItem,
    FunctionCallOutputItem,
    InputAudio,
    InputImage,
    InputText,
    Item,
    MessageItem,
    OutputAudio,
    OutputText,
    check_item_for_create,
)
from voxwire.protocol.server_events import ReceivedEvent

__all__ = ["ConnectionLoss", "RestorationPlan", "items_to_resend", "restoration_items"]


@dataclass(frozen=True)
class RestorationPlan:
    """What a new connection needs to go on where a lost one stopped.

    ``items``: to recreate on the new server session, in conversation order
    (:func:`restoration_items`); ``skipped``: ids of the lost conversation's items that cannot
    be. ``resend``: the item creates the lost server never acknowledged, oldest first, as sent
    (sent again after the restoration: :func:`items_to_resend`). ``requests``: the
    ``response.create`` requests no response answered, in flight first, with their parameters
    and sources (asked again after the items). ``lost_responses``: the responses that were in
    progress."""

    items: tuple[Item, ...] = ()
    skipped: tuple[str, ...] = ()
    resend: tuple[ConversationItemCreate, ...] = ()
    requests: tuple[ResponseRequest, ...] = ()
    lost_responses: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConnectionLoss:
    """What :meth:`RealtimeProtocol.connection_lost` decided: the events that settle what was in
    flight (each response in progress done with status ``cancelled``, reason
    ``connection_lost``; item deletes and truncates the server never acknowledged taken as
    done), already applied to the protocol's state and to be handed to the application like
    received events; and the plan for the next connection."""

    events: tuple[ReceivedEvent, ...]
    plan: RestorationPlan


def restoration_items(
    conversation: ConversationState, lost_responses: Collection[str] = ()
) -> tuple[tuple[Item, ...], tuple[str, ...]]:
    """What of ``conversation`` can be recreated by ``conversation.item.create``.

    * messages keep their text and images; audio cannot be handed back, so user audio becomes
      ``input_text`` and assistant audio ``output_text`` holding the transcript (a part with no
      transcript — transcription off, or truncated audio, whose transcript the server drops — is
      left out, and a message left with no part is skipped);
    * function calls that are complete, and function call outputs, as they are (an output whose
      call was forgotten for the conversation's ``max_items`` is skipped);
    * items of ``lost_responses`` (in progress when the connection was lost) only if they were
      complete; MCP items never (the server makes them).

    Returns the items to recreate and the ids of those that cannot be.
    """
    items: list[Item] = []
    skipped: list[str] = []
    for item in conversation.items():
        assert item.id is not None  # the conversation keeps items by id only
        restored = _restorable(conversation, item, lost_responses)
        if restored is None:
            skipped.append(item.id)
        else:
            items.append(restored)
    return tuple(items), tuple(skipped)


def _restorable(
    conversation: ConversationState, item: Item, lost_responses: Collection[str]
) -> Item | None:
    assert item.id is not None
    status = getattr(item, "status", None)
    if conversation.response_of(item.id) in lost_responses and status != "completed":
        return None
    if isinstance(item, MessageItem):
        content = [
            part
            for index, original in enumerate(item.content)
            if (part := _restorable_part(conversation, item.id, index, original)) is not None
        ]
        if not content:
            return None
        restored: Item = MessageItem(id=item.id, role=item.role, content=content)
    elif isinstance(item, FunctionCallItem):
        if status in ("in_progress", "incomplete"):
            return None
        restored = FunctionCallItem(
            id=item.id, name=item.name, arguments=item.arguments, call_id=item.call_id
        )
    elif isinstance(item, FunctionCallOutputItem):
        if conversation.forgotten and not any(
            isinstance(other, FunctionCallItem) and other.call_id == item.call_id
            for other in conversation.items()
        ):
            return None  # its call was forgotten (max_items): the new server would refuse it
        restored = FunctionCallOutputItem(id=item.id, call_id=item.call_id, output=item.output)
    else:
        return None
    try:
        check_item_for_create(restored)
    except ConfigurationError:
        return None
    return restored


def _restorable_part(
    conversation: ConversationState, item_id: str, index: int, part: ContentPart
) -> ContentPart | None:
    if isinstance(part, InputText | InputImage):
        return part
    transcript = conversation.transcript(item_id, index)
    if isinstance(part, InputAudio):
        text = transcript if transcript is not None else part.transcript
        return InputText(text=text) if text else None
    if isinstance(part, OutputAudio):
        # A truncated part's transcript is gone on the server too (the conversation state
        # drops it): what the user heard of it is unknown, so nothing of it is restored.
        if conversation.truncated_at_ms(item_id, index) is not None:
            return None
        text = transcript if transcript is not None else part.transcript
        return OutputText(text=text) if text else None
    if isinstance(part, OutputText):
        text = part.text if part.text is not None else transcript
        return OutputText(text=text) if text else None
    return None  # pragma: no cover - every content part is handled above


def items_to_resend(
    unacknowledged: Sequence[ConversationItemCreate],
    conversation: ConversationState,
    already_sent: Collection[str] = (),
) -> tuple[ConversationItemCreate, ...]:
    """Which of the lost connection's ``unacknowledged`` item creates (oldest first:
    :attr:`RestorationPlan.resend`) to send again on the new one, whose
    restored ``conversation`` is given, and where.

    * each item once, in the original order; an item whose id is in ``already_sent`` (a tool
      output the tool runner sent again itself) or already in ``conversation`` is left out;
    * ``previous_item_id`` is kept when it still means something on the new server: ``None``
      or ``"root"``, a restored item, or an item sent again before this one; a predecessor the
      new server does not have (an item that could not be restored) would get the create
      rejected, so the item goes at the end instead (``None``).
    """
    sent = set(already_sent)
    resend: list[ConversationItemCreate] = []
    for create in unacknowledged:
        item_id = create.item.id
        if item_id is None or item_id in sent or item_id in conversation:
            continue
        previous = create.previous_item_id
        if previous not in (None, ROOT) and previous not in conversation and previous not in sent:
            previous = None
        resend.append(ConversationItemCreate(item=create.item, previous_item_id=previous))
        sent.add(item_id)
    return tuple(resend)
