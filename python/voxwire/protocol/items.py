"""Conversation items and their content parts (GA ``ConversationItem``).

An item is a message (system / user / assistant), a function call, a function call output, or
one of the hosted-MCP items. Items are told apart by ``type``; messages further by ``role``.
Content parts are told apart by ``type``: ``input_text``, ``input_audio``, ``input_image`` in
user and system messages, ``output_text`` and ``output_audio`` in assistant messages.

Audio inside content parts is base64 on the wire and ``bytes`` here (decoded and encoded by
msgspec in C, never touched by Python code).

Every optional field defaults to ``None`` and is left off the wire when ``None``: the GA
reference treats a missing field and ``null`` alike for items.
"""

from __future__ import annotations

from typing import Any, Literal

from msgspec import Struct

from voxwire.exceptions import ConfigurationError

__all__ = [
    "ContentPart",
    "FunctionCallItem",
    "FunctionCallOutputItem",
    "InputAudio",
    "InputImage",
    "InputText",
    "Item",
    "ItemReference",
    "ItemStatus",
    "McpApprovalRequestItem",
    "McpApprovalResponseItem",
    "McpCallItem",
    "McpHttpError",
    "McpListToolsItem",
    "McpProtocolError",
    "McpToolExecutionError",
    "McpToolInfo",
    "MessageItem",
    "OutputAudio",
    "OutputText",
    "Role",
    "assistant_message",
    "check_item_for_create",
    "function_call_output",
    "system_message",
    "user_message",
]

Role = Literal["system", "user", "assistant"]
ItemStatus = Literal["completed", "incomplete", "in_progress"]


class _Tagged(Struct, tag_field="type", kw_only=True, frozen=True, gc=False, omit_defaults=True):
    """Immutable wire record told apart by ``type``; ``None`` fields are left off the wire."""

    @property
    def type(self) -> str:
        """The record's ``type`` on the wire."""
        return str(self.__struct_config__.tag)


# --- content parts --------------------------------------------------------------------------------


class InputText(_Tagged, tag="input_text", frozen=True):
    """Text written by the user (or the system prompt of a system message)."""

    text: str


class InputAudio(_Tagged, tag="input_audio", frozen=True):
    """User audio; the server fills ``transcript`` if input transcription is on."""

    audio: bytes | None = None
    transcript: str | None = None


class InputImage(_Tagged, tag="input_image", frozen=True):
    """An image as a ``data:`` URL (the GA reference accepts PNG and JPEG data URLs)."""

    image_url: str
    detail: Literal["auto", "low", "high"] | None = None


class OutputText(_Tagged, tag="output_text", frozen=True):
    """Text spoken — or written — by the model."""

    text: str | None = None


class OutputAudio(_Tagged, tag="output_audio", frozen=True):
    """Model audio; the server sends ``transcript`` with it and no ``audio`` in most items."""

    audio: bytes | None = None
    transcript: str | None = None


ContentPart = InputText | InputAudio | InputImage | OutputText | OutputAudio


# --- items ----------------------------------------------------------------------------------------


class _Item(_Tagged, frozen=True):
    id: str | None = None
    object: Literal["realtime.item"] | None = None
    status: ItemStatus | None = None


class MessageItem(_Item, tag="message", kw_only=True, frozen=True):
    """A message; which content part types are allowed depends on ``role``."""

    role: Role
    content: list[ContentPart]


class FunctionCallItem(_Item, tag="function_call", kw_only=True, frozen=True):
    """The model calls a function tool; ``arguments`` is a JSON string."""

    name: str
    arguments: str
    call_id: str | None = None


class FunctionCallOutputItem(_Item, tag="function_call_output", kw_only=True, frozen=True):
    """The result of a function call, sent back by the client."""

    call_id: str
    output: str


class McpApprovalRequestItem(_Tagged, tag="mcp_approval_request", frozen=True):
    """The server asks whether it may call an MCP tool."""

    id: str
    name: str
    arguments: str
    server_label: str


class McpApprovalResponseItem(_Tagged, tag="mcp_approval_response", frozen=True):
    """The client's answer to an :class:`McpApprovalRequestItem`."""

    id: str
    approval_request_id: str
    approve: bool
    reason: str | None = None


class McpToolInfo(Struct, kw_only=True, frozen=True, gc=False, omit_defaults=True):
    """One tool listed by an MCP server."""

    name: str
    input_schema: Any
    annotations: Any = None
    description: str | None = None


class McpListToolsItem(_Tagged, tag="mcp_list_tools", frozen=True):
    """The tools an MCP server offers."""

    server_label: str
    tools: list[McpToolInfo]
    id: str | None = None


class McpProtocolError(_Tagged, tag="protocol_error", frozen=True):
    """The MCP server broke the MCP protocol."""

    code: int
    message: str


class McpToolExecutionError(_Tagged, tag="tool_execution_error", frozen=True):
    """The MCP tool ran and failed."""

    message: str


class McpHttpError(_Tagged, tag="http_error", frozen=True):
    """The MCP server answered with an HTTP error."""

    code: int
    message: str


class McpCallItem(_Tagged, tag="mcp_call", frozen=True):
    """A call the server made to an MCP tool, with its output or error."""

    id: str
    name: str
    arguments: str
    server_label: str
    approval_request_id: str | None = None
    output: str | None = None
    error: McpProtocolError | McpToolExecutionError | McpHttpError | None = None


Item = (
    MessageItem
    | FunctionCallItem
    | FunctionCallOutputItem
    | McpApprovalRequestItem
    | McpApprovalResponseItem
    | McpListToolsItem
    | McpCallItem
)


class ItemReference(_Tagged, tag="item_reference", frozen=True):
    """Refers to an existing item by id in ``response.create``'s ``input``."""

    id: str


# --- builders -------------------------------------------------------------------------------------


def user_message(text: str, *, id: str | None = None) -> MessageItem:
    """A user message holding one ``input_text`` part."""
    return MessageItem(id=id, role="user", content=[InputText(text=text)])


def system_message(text: str, *, id: str | None = None) -> MessageItem:
    """A system message holding one ``input_text`` part."""
    return MessageItem(id=id, role="system", content=[InputText(text=text)])


def assistant_message(text: str, *, id: str | None = None) -> MessageItem:
    """An assistant message holding one ``output_text`` part."""
    return MessageItem(id=id, role="assistant", content=[OutputText(text=text)])


def function_call_output(
    call_id: str, output: str, *, id: str | None = None
) -> FunctionCallOutputItem:
    """The result of the function call ``call_id``."""
    return FunctionCallOutputItem(id=id, call_id=call_id, output=output)


# Which content part types a client may put in a message of each role (GA
# ``RealtimeConversationItem{System,User,Assistant}Message``).
_CONTENT_BY_ROLE: dict[str, tuple[type[Struct], ...]] = {
    "system": (InputText,),
    "user": (InputText, InputAudio, InputImage),
    "assistant": (OutputText, OutputAudio),
}


def check_item_for_create(item: Item) -> None:
    """Raise :class:`ConfigurationError` if ``conversation.item.create`` cannot carry ``item``.

    The server would answer with an ``error`` event; failing here names the part and the role.
    """
    if isinstance(item, MessageItem):
        allowed = _CONTENT_BY_ROLE[item.role]
        for index, part in enumerate(item.content):
            if not isinstance(part, allowed):
                names = ", ".join(str(cls.__struct_config__.tag) for cls in allowed)
                raise ConfigurationError(
                    f"item.content[{index}].type={part.type!r} is invalid in a {item.role} "
                    f"message: expected {names}"
                )
