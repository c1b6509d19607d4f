"""A ``response.create`` resolved against the session: what the response will be, or why not.

:func:`plan_response` checks the request (``conversation``, ``output_modalities``, a voice to
speak with, one response at a time in the conversation) and merges its parameters over the
session's defaults, as the GA reference says a response's parameters override the session's for
that response only. The result is the response's :class:`ResponseBuilder` (its events), the
:class:`Turn` its responder decides from, and the voice to speak with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import UNSET

from voxwire.protocol import (
    AudioFormat,
    InputAudio,
    Item,
    ItemReference,
    MessageItem,
    ResponseCreateParams,
    VoiceId,
)
from voxwire.server.core.config import DEFAULT_VOICE
from voxwire.server.core.conversation import ServerConversation
from voxwire.server.core.errors import ServerError
from voxwire.server.core.mcp import mcp_tool_configs
from voxwire.server.core.response import ResponseBuilder, ResponseSpec
from voxwire.server.core.session import ServerSession
from voxwire.server.core.turn import Turn

__all__ = ["ResponsePlan", "plan_response"]


@dataclass(frozen=True)
class ResponsePlan:
    """What a response will send (``builder``), decide from (``turn``) and speak with."""

    builder: ResponseBuilder
    turn: Turn
    voice: str  # the engine's voice name (a custom voice object falls back to the default)
    speed: float


def plan_response(
    state: ServerSession,
    params: ResponseCreateParams | None,
    *,
    active_response_id: str | None,
    has_voice: bool,
) -> ResponsePlan:
    """The plan of a response; :class:`ServerError` if the request cannot be served.
    ``active_response_id``: the response writing to the conversation now, if any."""
    session = state.session
    p = params if params is not None else ResponseCreateParams()
    mode = _conversation_mode(p, active_response_id)
    modalities = _modalities(p, session, has_voice)
    out = session["audio"]["output"]
    voice, fmt = _voice_and_format(p, out)
    context = _context(state.conversation, p.input)
    # Prompt caching as the service bills it: the leading items this response shares with the
    # previous response's input were processed before and count as cached input tokens.
    cached = _shared_prefix(state.last_context, context)
    state.last_context = tuple(item.id for item in context)
    tools: list[dict[str, Any]] = (
        session["tools"] if p.tools is UNSET else msgspec.to_builtins(p.tools)
    )
    tool_choice = session["tool_choice"] if p.tool_choice is UNSET else p.tool_choice
    spec = ResponseSpec(
        response_id=state.ids.response(),
        conversation_id=state.conversation_id if mode == "auto" else None,
        output_modalities=list(modalities),
        voice=voice if isinstance(voice, str) else msgspec.convert(voice, VoiceId),
        output_format=fmt,
        max_output_tokens=(
            session["max_output_tokens"] if p.max_output_tokens is UNSET else p.max_output_tokens
        ),
        metadata=p.metadata if isinstance(p.metadata, dict) else None,
        context=context,
        context_audio_ms=_audio_ms(state.conversation, context),
        cached=cached,
        cached_audio_ms=_audio_ms(state.conversation, cached),
    )
    functions = [t for t in tools if t.get("type") == "function"]
    turn = Turn(
        items=context,
        instructions=session["instructions"] if p.instructions is UNSET else p.instructions,
        tools=[t["name"] for t in functions],
        tool_specs=functions,
        tool_choice=tool_choice if isinstance(tool_choice, str) else "required",
        mcp_tools=mcp_tool_configs(tools),
    )
    return ResponsePlan(
        builder=ResponseBuilder(spec, state.ids, state.conversation),
        turn=turn,
        voice=voice if isinstance(voice, str) else DEFAULT_VOICE,
        speed=float(out.get("speed") or 1.0),
    )


def _conversation_mode(p: ResponseCreateParams, active_response_id: str | None) -> str:
    mode = "auto" if p.conversation is UNSET else p.conversation
    if mode not in ("auto", "none"):
        raise ServerError(
            "invalid_value",
            f"Invalid value: {mode!r}. Supported values are: 'auto' and 'none'.",
            param="response.conversation",
        )
    if mode == "auto" and active_response_id is not None:
        raise ServerError(
            "conversation_already_has_active_response",
            f"Conversation already has an active response in progress: {active_response_id}. "
            "Wait until the response is finished before creating a new one.",
        )
    return mode


def _modalities(p: ResponseCreateParams, session: dict[str, Any], has_voice: bool) -> list[str]:
    modalities: list[str] = (
        session["output_modalities"] if p.output_modalities is UNSET else p.output_modalities
    )
    if modalities not in (["audio"], ["text"]):
        raise ServerError(
            "invalid_value",
            f"Invalid value: {modalities!r}. Supported values are: ['audio'] and ['text'].",
            param="response.output_modalities",
        )
    if modalities == ["audio"] and not has_voice:
        raise ServerError(
            "invalid_value",
            "This voxwire server was started without a voice (text only): ask for "
            "output_modalities ['text'], or restart it with text-to-speech.",
            param="response.output_modalities",
        )
    return modalities


def _voice_and_format(p: ResponseCreateParams, out: dict[str, Any]) -> tuple[Any, AudioFormat]:
    voice, fmt = out["voice"], msgspec.convert(out["format"], AudioFormat)
    audio_params = p.audio.output if p.audio is not UNSET else UNSET
    if audio_params is not UNSET:
        voice = voice if audio_params.voice is UNSET else audio_params.voice
        fmt = fmt if audio_params.format is UNSET else audio_params.format
    return voice, fmt


def _context(
    conversation: ServerConversation, given: list[Item | ItemReference] | Any
) -> list[Item]:
    """The response's input: the conversation, or the items (and references) it was given."""
    if given is UNSET:
        return conversation.items()
    return [
        conversation.get(entry.id) if isinstance(entry, ItemReference) else entry for entry in given
    ]


def _shared_prefix(previous: tuple[str | None, ...], context: list[Item]) -> list[Item]:
    """The leading items of ``context`` that led the previous response's input too."""
    count = 0
    for item_id, item in zip(previous, context, strict=False):
        if item_id is None or item_id != item.id:
            break
        count += 1
    return context[:count]


def _audio_ms(conversation: ServerConversation, context: list[Item]) -> int:
    """The duration of the user audio in ``context`` (billed as input audio tokens)."""
    return sum(
        conversation.audio_duration_ms(item.id, index)
        for item in context
        if isinstance(item, MessageItem) and item.id is not None
        for index, part in enumerate(item.content)
        if isinstance(part, InputAudio)
    )
