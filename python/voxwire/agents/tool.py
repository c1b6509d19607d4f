"""Function tools: a Python function the model may call, declared as data.

:func:`function_tool` turns a function into a :class:`FunctionTool`: its name, a description
(the docstring's first paragraph), and a JSON Schema of its parameters built from the type
hints (``str``, ``int``, ``float``, ``bool``, ``None``, ``list[...]``, ``tuple[X, ...]``,
``dict[str, ...]``, ``Literal[...]``, enums, unions; ``Annotated[X, "text"]`` describes a
parameter, and so does a Google-style ``Args:`` section). Give ``parameters`` explicitly for
anything richer.

Everything here is pure: parsing arguments, formatting outputs, messages for the model. Running
the function (in a thread when it is synchronous, with its timeout, after its approval) is the
session's job (:mod:`voxwire.asyncio.agents.tools`). The Realtime API has no strict flag for
function tools, so ``strict`` is enforced on this side: the schema forbids unknown properties and
arguments are checked against the type hints before the function runs; arguments that do not
fit go back to the model as an error output, the function is not called.

A :class:`voxwire.protocol.FunctionTool` is the wire *declaration* of a tool; this
:class:`FunctionTool` is a tool the session runs (its :meth:`FunctionTool.declaration` is what
the server sees). An agent may list both: calls to a declaration-only tool are left to the
application.
"""

from __future__ import annotations

import enum
import inspect
import re
import types
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import (
    Annotated,
    Any,
    Literal,
    TypeAlias,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    overload,
)

import msgspec

from voxwire.agents.call import ToolCall, ToolContext
from voxwire.agents.tool_guardrail import (
    ToolInputGuardrail,
    ToolOutputGuardrail,
    freeze_guardrails,
)
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import config as wire
from voxwire.protocol.limits import read_json

__all__ = [
    "ApprovalPolicy",
    "BackgroundResult",
    "FunctionTool",
    "OnTimeout",
    "ToolArgumentsError",
    "ToolCall",
    "ToolContext",
    "ToolProgress",
    "ToolTimeoutError",
    "background_result",
    "format_output",
    "function_tool",
    "needs_approval",
    "progress",
]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolArgumentsError(ValueError):
    """The model called a tool with arguments that do not fit its parameters (the model's
    mistake: it is told, and may try again)."""


class ToolTimeoutError(TimeoutError):
    """A tool ran longer than its ``timeout_s``."""


@dataclass(frozen=True, slots=True)
class BackgroundResult:
    """A tool output that does not ask for a response: the output joins the conversation and
    the model speaks about it when something else makes it respond."""

    output: Any


def background_result(output: Any) -> BackgroundResult:
    """Return this from a tool to send ``output`` without triggering a response."""
    return BackgroundResult(output)


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """An interim output of a tool that yields (an async generator): see :func:`progress`."""

    output: Any
    respond: bool = False


def progress(output: Any, *, respond: bool = False) -> ToolProgress:
    """Yield this from an async generator tool to tell the model how the call is going before
    its result: ``output`` joins the conversation at once as a system message naming the call
    (the Realtime API takes one ``function_call_output`` per call, which the result is).
    ``respond=True`` also asks for a response, so the model can say it (gated: after the
    response in progress). Any other value the tool yields is its result; the generator is
    then closed."""
    return ToolProgress(output, respond)


#: ``True`` / ``False``, or a function of the call deciding (sync or async).
ApprovalPolicy: TypeAlias = "bool | Callable[[ToolCall], bool | Awaitable[bool]]"
#: Text the model sees when the tool timed out, or a function of the call and the timeout.
TimeoutMessage: TypeAlias = "str | Callable[[ToolCall, float], str]"
#: Text the model sees when the tool raised, made from the call and the exception.
FailureMessage: TypeAlias = "Callable[[ToolCall, BaseException], str]"
#: What a timeout does: the model gets the timeout message as the output (``error_as_result``),
#: or no output is sent and the call fails with an ``error`` event (``raise``).
OnTimeout: TypeAlias = Literal["error_as_result", "raise"]
#: Whether the tool is offered, decided when an agent becomes active (sync or async).
#: (The function gets the :class:`~voxwire.agents.RealtimeAgent`; typed ``Any`` here because
#: the agent is declared above the tools: voxwire/agents/call.py.)
EnabledPolicy: TypeAlias = "bool | Callable[[Any], bool | Awaitable[bool]]"


def default_failure(call: ToolCall, exc: BaseException) -> str:
    """What the model gets when a tool raised (unless a message or formatter says otherwise)."""
    return f"An error occurred while running the tool {call.name}: {exc}"


def default_timeout(call: ToolCall, timeout_s: float) -> str:
    """What the model gets when a tool timed out (unless a message or formatter says
    otherwise)."""
    return f"The tool {call.name} timed out after {timeout_s:g} seconds."


@dataclass(frozen=True, kw_only=True)
class FunctionTool:
    """A tool the session runs when the model calls it.

    ``function`` is called with the arguments as keyword arguments (after a
    :class:`ToolContext` if its first parameter is annotated so); it may be synchronous (run in
    a thread) or a coroutine function. What it returns becomes the output: text as is,
    anything else as JSON; :func:`background_result` sends it without asking for a response.

    A tool that is an async generator may ``yield progress(...)`` (interim outputs) before it
    yields its result (:func:`progress`).

    ``timeout_s``: the longest it may run (``None``: no limit); then, with
    ``on_timeout="error_as_result"``, the model gets ``timeout_message`` as the output, with
    ``"raise"`` no output is sent and the call fails (an ``error`` event). ``failure_message``:
    what the model gets when it raises. Either, when ``None``, falls back to the session's
    ``tool_error_formatter``, then to the default text. ``needs_approval``: ask the application
    first (``tool_approval_requested`` event). ``is_enabled``: offer it or not, decided when
    the agent becomes active. ``input_guardrails`` / ``output_guardrails``: checks around the
    call (:mod:`voxwire.agents.tool_guardrail`).
    """

    name: str
    function: Callable[..., Any]
    description: str | None = None
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool = True
    timeout_s: float | None = None
    timeout_message: TimeoutMessage | None = None
    failure_message: FailureMessage | None = None
    needs_approval: ApprovalPolicy = False
    is_enabled: EnabledPolicy = True
    arguments_type: type[msgspec.Struct] | None = None
    """Checks and converts the arguments (made from the type hints by :func:`function_tool`);
    ``None``: any JSON object is accepted."""
    takes_context: bool = False
    on_timeout: OnTimeout = "error_as_result"
    input_guardrails: Sequence[ToolInputGuardrail] = ()
    output_guardrails: Sequence[ToolOutputGuardrail] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ConfigurationError(
                f"tool name {self.name!r} is invalid: expected 1-64 letters, digits, '_' or '-'"
            )
        if not callable(self.function):
            raise ConfigurationError(f"tool {self.name!r}: function must be callable")
        if not isinstance(self.parameters, dict) or self.parameters.get("type") != "object":
            raise ConfigurationError(
                f"tool {self.name!r}: parameters must be a JSON Schema object "
                '({"type": "object", "properties": {...}})'
            )
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ConfigurationError(
                f"tool {self.name!r}: timeout_s={self.timeout_s!r} is invalid: expected "
                "seconds > 0 or None"
            )
        if self.on_timeout not in ("error_as_result", "raise"):
            raise ConfigurationError(
                f"tool {self.name!r}: on_timeout={self.on_timeout!r} is invalid: expected "
                "'error_as_result' (the model gets the timeout message) or 'raise' (no output, "
                "an error event)"
            )
        freeze_guardrails(self)
        for option in ("needs_approval", "is_enabled"):
            value = getattr(self, option)
            if not (isinstance(value, bool) or callable(value)):
                raise ConfigurationError(
                    f"tool {self.name!r}: {option}={value!r} is invalid: expected a bool or a "
                    "function returning one"
                )

    @property
    def is_coroutine(self) -> bool:
        return inspect.iscoroutinefunction(self.function)

    @property
    def is_generator(self) -> bool:
        """An async generator: it may yield :func:`progress` before its result."""
        return inspect.isasyncgenfunction(self.function)

    def declaration(self) -> wire.FunctionTool:
        """What the server is told about the tool."""
        return wire.FunctionTool(
            name=self.name,
            description=self.description if self.description is not None else msgspec.UNSET,
            parameters=self.parameters,
        )

    def parse_arguments(self, raw: str) -> dict[str, Any]:
        """The call's arguments as keyword arguments; raises :class:`ToolArgumentsError`."""
        # Bounded (depth, size) and never raising on what the server sent: not UTF-8,
        # nested thousands deep, a lone surrogate.
        value, problem = read_json(raw) if raw.strip() else ({}, None)
        if problem is not None:
            raise ToolArgumentsError(f"the arguments are not valid JSON: {problem}")
        if not isinstance(value, dict):
            raise ToolArgumentsError(
                f"the arguments must be a JSON object, got {type(value).__name__}"
            )
        if self.arguments_type is None:
            return value
        try:
            converted = msgspec.convert(value, self.arguments_type, strict=self.strict)
        except msgspec.ValidationError as exc:
            raise ToolArgumentsError(f"the arguments do not fit the parameters: {exc}") from None
        return {f.name: getattr(converted, f.name) for f in msgspec.structs.fields(converted)}

    def call_args(
        self, arguments: Mapping[str, Any], context: ToolContext[Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Positional and keyword arguments for ``function``."""
        return ((context,) if self.takes_context else ()), dict(arguments)


def format_output(value: Any) -> str:
    """A tool's return value as the text the model sees: text as is, anything else as JSON
    (``str()`` if it cannot be encoded)."""
    if isinstance(value, str):
        return value
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, msgspec.EncodeError):
        return str(value)


async def needs_approval(tool: FunctionTool, call: ToolCall) -> bool:
    """Whether the application must approve ``call`` first (awaiting an async policy)."""
    policy = tool.needs_approval
    if isinstance(policy, bool):
        return policy
    decision = policy(call)
    if inspect.isawaitable(decision):
        decision = await decision
    return bool(decision)


# --- building a tool from a function ------------------------------------------------------------


@overload
def function_tool(function: Callable[..., Any], /) -> FunctionTool: ...


@overload
def function_tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: dict[str, Any] | None = None,
    strict: bool = True,
    timeout_s: float | None = None,
    timeout_message: TimeoutMessage | None = None,
    failure_message: FailureMessage | None = None,
    needs_approval: ApprovalPolicy = False,
    is_enabled: EnabledPolicy = True,
    on_timeout: OnTimeout = "error_as_result",
    input_guardrails: Sequence[ToolInputGuardrail] = (),
    output_guardrails: Sequence[ToolOutputGuardrail] = (),
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def function_tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: dict[str, Any] | None = None,
    strict: bool = True,
    timeout_s: float | None = None,
    timeout_message: TimeoutMessage | None = None,
    failure_message: FailureMessage | None = None,
    needs_approval: ApprovalPolicy = False,
    is_enabled: EnabledPolicy = True,
    on_timeout: OnTimeout = "error_as_result",
    input_guardrails: Sequence[ToolInputGuardrail] = (),
    output_guardrails: Sequence[ToolOutputGuardrail] = (),
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a :class:`FunctionTool` of a function (or an async generator, see
    :func:`progress`): ``@function_tool`` or ``@function_tool(timeout_s=5,
    needs_approval=True)``.

    The name defaults to the function's, the description to its docstring's first paragraph,
    the parameters to a schema of its type hints (or give ``parameters``: then the arguments
    are passed as they come, unchecked).
    """

    def build(fn: Callable[..., Any]) -> FunctionTool:
        tool_name = name if name is not None else getattr(fn, "__name__", "")
        summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
        takes_context, params = _signature(fn, tool_name, explicit=parameters is not None)
        if parameters is not None:
            schema, arguments_type = parameters, None
        else:
            schema, arguments_type = _schema_from_hints(fn, tool_name, params, arg_docs, strict)
        return FunctionTool(
            name=tool_name,
            function=fn,
            description=description if description is not None else (summary or None),
            parameters=schema,
            strict=strict,
            timeout_s=timeout_s,
            needs_approval=needs_approval,
            is_enabled=is_enabled,
            arguments_type=arguments_type,
            takes_context=takes_context,
            timeout_message=timeout_message,
            failure_message=failure_message,
            on_timeout=on_timeout,
            input_guardrails=input_guardrails,
            output_guardrails=output_guardrails,
        )

    if function is not None:
        return build(function)
    return build


def _signature(
    fn: Callable[..., Any], tool_name: str, *, explicit: bool
) -> tuple[bool, list[inspect.Parameter]]:
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:  # an unresolvable annotation: name it
        raise ConfigurationError(f"tool {tool_name!r}: cannot read its type hints: {exc}") from exc
    params = list(inspect.signature(fn).parameters.values())
    takes_context = bool(params) and _is_context(hints.get(params[0].name))
    if takes_context:
        params = params[1:]
    if explicit:  # the arguments are passed as given: the function takes what it takes
        return takes_context, params
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ConfigurationError(
                f"tool {tool_name!r}: parameter {param.name!r} cannot be filled from JSON "
                "arguments (use plain named parameters)"
            )
        if _is_context(hints.get(param.name)):
            raise ConfigurationError(f"tool {tool_name!r}: a ToolContext parameter must come first")
    return takes_context, params


def _is_context(hint: Any) -> bool:
    """``ToolContext`` or ``ToolContext[X]``."""
    return hint is ToolContext or get_origin(hint) is ToolContext


def _schema_from_hints(
    fn: Callable[..., Any],
    tool_name: str,
    params: Sequence[inspect.Parameter],
    arg_docs: Mapping[str, str],
    strict: bool,
) -> tuple[dict[str, Any], type[msgspec.Struct]]:
    hints = get_type_hints(fn, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    struct_fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for param in params:
        if param.name not in hints:
            raise ConfigurationError(
                f"tool {tool_name!r}: parameter {param.name!r} has no type hint (add one, or "
                "give parameters= explicitly)"
            )
        hint = hints[param.name]
        try:
            prop = _json_schema(hint)
        except TypeError as exc:
            raise ConfigurationError(
                f"tool {tool_name!r}: parameter {param.name!r}: {exc} (give parameters= "
                "explicitly for richer types)"
            ) from None
        if param.name in arg_docs and "description" not in prop:
            prop["description"] = arg_docs[param.name]
        properties[param.name] = prop
        if param.default is param.empty:
            required.append(param.name)
            struct_fields.append((param.name, hint))
        else:
            struct_fields.append((param.name, hint, param.default))
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if strict:
        schema["additionalProperties"] = False
    arguments_type = msgspec.defstruct(
        f"{tool_name}_arguments", struct_fields, forbid_unknown_fields=strict
    )
    return schema, arguments_type


_SIMPLE: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _json_schema(hint: Any) -> dict[str, Any]:
    """JSON Schema of a simple type hint; ``TypeError`` for anything else."""
    if hint in _SIMPLE:
        return {"type": _SIMPLE[hint]}
    if hint is None or hint is type(None):
        return {"type": "null"}
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        schema = _json_schema(args[0])
        texts = [a for a in args[1:] if isinstance(a, str)]
        if texts:
            schema["description"] = texts[0]
        return schema
    if origin is Literal:
        values = list(args)
        schema = {"enum": values}
        kinds = {_SIMPLE.get(type(v)) for v in values}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _json_schema(Literal[tuple(member.value for member in hint)])
    if origin in (Union, types.UnionType):
        options = [_json_schema(a) for a in args]
        return {"anyOf": options}
    if origin in (list, Sequence) or (origin is tuple and len(args) == 2 and args[1] is ...):
        if not args:
            raise TypeError(f"{hint!r} needs an item type")
        return {"type": "array", "items": _json_schema(args[0])}
    if origin in (dict, Mapping):
        if not args or args[0] is not str:
            raise TypeError(f"{hint!r}: only dict[str, ...] maps to a JSON object")
        return {"type": "object", "additionalProperties": _json_schema(args[1])}
    raise TypeError(f"type {hint!r} has no simple JSON Schema")


_ARGS_HEADER = re.compile(r"^(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s+(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph, and parameter descriptions from a Google-style ``Args:`` block."""
    lines = doc.splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _ARGS_HEADER.match(line.strip()):
            break
        summary.append(line.strip())
    arg_docs: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in lines:
        if _ARGS_HEADER.match(line.strip()):
            in_args, current = True, None
            continue
        if not in_args:
            continue
        if line.strip() and not line.startswith((" ", "\t")):
            break  # the next section
        match = _ARG_LINE.match(line)
        if match and (current is None or len(line) - len(line.lstrip()) <= 4):
            current = match.group(1)
            arg_docs[current] = match.group(2).strip()
        elif current is not None and line.strip():
            arg_docs[current] = f"{arg_docs[current]} {line.strip()}".strip()
    return " ".join(summary), arg_docs
