"""A responder backed by any OpenAI-compatible chat-completions endpoint (a local LLM server:
llama.cpp's ``llama-server``, Ollama, vLLM, LM Studio… or the hosted API).

Each response becomes one ``POST {base_url}/chat/completions`` (not streamed):

* ``messages``: the instructions as a ``system`` message, then the context items in order —
  user and system messages (text parts, audio transcripts, images as ``image_url`` parts),
  assistant messages (text, or the transcript of their audio), function calls as the
  ``tool_calls`` of an assistant message and their outputs as ``tool`` messages. User audio with
  no transcript is sent as the text ``[audio without transcript]`` so that the model knows the
  user spoke; a call without an output in the context (or an output without its call) is left
  out, since chat endpoints refuse unanswered tool calls.
* ``tools``: the function tools the client declared (name, description, parameters);
  ``tool_choice`` ``"required"`` is passed on, ``"none"`` sends no tools.

The reply's text becomes a :class:`Say` (``<think>…</think>`` reasoning blocks, which some local
models emit, are removed) and each tool call a :class:`CallTool`. A failure — the endpoint
unreachable, an HTTP error, a reply that is not a chat completion, a call of a tool the client
did not declare — raises :class:`ChatEndpointError` saying what happened and what to check; the
server fails that response (``response.done`` ``failed`` with the message) and the session goes
on.

The request runs in a worker thread with the standard library's ``urllib`` (no proxy: the
endpoint is usually on loopback), bounded by ``timeout_s``. The API key, if any, is sent as
``Authorization: Bearer …`` and is never shown in a repr or a log.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from voxwire.exceptions import ConfigurationError, VoxwireError
from voxwire.protocol import (
    FunctionCallItem,
    FunctionCallOutputItem,
    InputAudio,
    InputImage,
    InputText,
    MessageItem,
    OutputAudio,
    OutputText,
)
from voxwire.protocol.limits import read_json
from voxwire.server.core.turn import CallTool, Output, Say, Turn
from voxwire.server.engines.worker import in_daemon_thread

__all__ = ["ChatCompletionsResponder", "ChatEndpointError", "chat_request"]

NO_TRANSCRIPT: Final = "[audio without transcript]"
_THINK: Final = re.compile(r"<think>.*?</think>", re.DOTALL)
_EXCERPT_CHARS: Final = 300


class ChatEndpointError(VoxwireError):
    """The chat-completions endpoint failed; the message says how and what to check."""


@dataclass(frozen=True)
class ChatCompletionsResponder:
    """Asks ``{base_url}/chat/completions`` for each response.

    ``base_url`` is the API root (``http://127.0.0.1:8080/v1``); a URL already ending in
    ``/chat/completions`` is used as it is. ``extra_body`` is merged into every request
    (``temperature``, ``seed``, server-specific options).
    """

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 60.0
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"chat endpoint {self.base_url!r} is invalid: expected an http:// or https:// "
                "URL such as http://127.0.0.1:8080/v1"
            )
        if not self.model:
            raise ConfigurationError("the chat model name is empty: give the model to ask")
        if self.timeout_s <= 0:
            raise ConfigurationError(f"timeout_s={self.timeout_s!r} is invalid: expected > 0")

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else base + "/chat/completions"

    async def respond(self, turn: Turn) -> list[Output]:
        body = {**chat_request(turn, self.model), **self.extra_body}
        data = json.dumps(body).encode()
        reply = await in_daemon_thread(lambda: self._post(data), "voxwire-chat")
        return self._outputs(reply, turn)

    # --- HTTP -------------------------------------------------------------------------------------

    def _post(self, data: bytes) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        # No proxy handler: an HTTP_PROXY meant for the internet must not capture a loopback
        # model server.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = _excerpt(exc.read())
            hint = (
                " Check the API key (voxwire serve --chat-key-env)."
                if exc.code in (401, 403)
                else " Check --chat-url and --chat-model."
                if exc.code == 404
                else ""
            )
            raise ChatEndpointError(
                f"chat endpoint {self.url} answered HTTP {exc.code}: {detail}.{hint}"
            ) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise ChatEndpointError(
                    f"chat endpoint {self.url} did not answer within {self.timeout_s:g} s"
                ) from None
            raise ChatEndpointError(
                f"chat endpoint {self.url} is unreachable ({exc.reason}): is the model server "
                "running, and is this its address?"
            ) from None
        except TimeoutError:
            raise ChatEndpointError(
                f"chat endpoint {self.url} did not answer within {self.timeout_s:g} s"
            ) from None
        answer, problem = read_json(raw)  # bounded: a reply nested thousands deep is refused
        if problem is not None:
            raise ChatEndpointError(
                f"chat endpoint {self.url} did not answer with JSON: {_excerpt(raw)} ({problem})"
            )
        return answer

    # --- the reply --------------------------------------------------------------------------------

    def _outputs(self, reply: Any, turn: Turn) -> list[Output]:
        try:
            message = reply["choices"][0]["message"]
            if not isinstance(message, dict):
                raise TypeError
        except (KeyError, IndexError, TypeError):
            raise ChatEndpointError(
                f"chat endpoint {self.url} answered something that is not a chat completion "
                f"(no choices[0].message): {_excerpt(json.dumps(reply).encode())}"
            ) from None
        outputs: list[Output] = []
        text = _reply_text(message.get("content"))
        if text:
            outputs.append(Say(text))
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(name, str):
                raise ChatEndpointError(f"chat endpoint {self.url} sent a tool call without name")
            if name not in turn.tools:
                declared = ", ".join(turn.tools) or "none"
                raise ChatEndpointError(
                    f"the model called {name!r}, which the client did not declare "
                    f"(declared: {declared})"
                )
            arguments = function.get("arguments") if isinstance(function, dict) else None
            if not isinstance(arguments, str):  # some servers send an object
                arguments = json.dumps(arguments if arguments is not None else {})
            outputs.append(CallTool(name=name, arguments=arguments))
        return outputs


def chat_request(turn: Turn, model: str) -> dict[str, Any]:
    """The chat-completions request body for ``turn`` (see the module docstring)."""
    messages: list[dict[str, Any]] = []
    if turn.instructions:
        messages.append({"role": "system", "content": turn.instructions})
    answered = {i.call_id for i in turn.items if isinstance(i, FunctionCallOutputItem)}
    called = {i.call_id for i in turn.items if isinstance(i, FunctionCallItem)}
    for item in turn.items:
        if isinstance(item, MessageItem):
            content = _message_content(item)
            if content:
                messages.append({"role": item.role, "content": content})
        elif isinstance(item, FunctionCallItem) and item.call_id in answered:
            call = {
                "id": item.call_id,
                "type": "function",
                "function": {"name": item.name, "arguments": item.arguments},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif isinstance(item, FunctionCallOutputItem) and item.call_id in called:
            messages.append({"role": "tool", "tool_call_id": item.call_id, "content": item.output})
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": False}
    if turn.tool_specs and turn.tool_choice != "none":
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    key: spec[key] for key in ("name", "description", "parameters") if key in spec
                },
            }
            for spec in turn.tool_specs
        ]
        if turn.tool_choice == "required":
            body["tool_choice"] = "required"
    return body


def _message_content(item: MessageItem) -> str | list[dict[str, Any]]:
    texts: list[str] = []
    images: list[str] = []
    for part in item.content:
        if isinstance(part, InputText | OutputText) and part.text:
            texts.append(part.text)
        elif isinstance(part, InputAudio):
            texts.append(part.transcript if part.transcript else NO_TRANSCRIPT)
        elif isinstance(part, OutputAudio) and part.transcript:
            texts.append(part.transcript)
        elif isinstance(part, InputImage):
            images.append(part.image_url)
    text = " ".join(texts)
    if not images:
        return text
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    return parts + [{"type": "image_url", "image_url": {"url": url}} for url in images]


def _reply_text(content: object) -> str:
    if isinstance(content, list):  # content parts, as some servers answer
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    if not isinstance(content, str):
        return ""
    return _THINK.sub("", content).strip()


def _excerpt(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + "…"
