"""Translation between chatomon's neutral history and OpenAI's two wire formats (private).

The request side builds plain JSON-ready dicts for the Chat Completions API (`messages`,
`tools`) and the Responses API (`instructions`, `input`, `tools`). The stream side reads
the SDK's event objects duck-typed (no SDK import here) and turns them into chatomon
events: `ChatStreamReader` for `chat.completion.chunk` objects, `ResponsesStreamReader`
for Responses stream events.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chatomon.errors import (
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderContextLengthError,
    ProviderError,
    ProviderProtocolError,
    ProviderRateLimitError,
    ProviderUnavailableError,
)
from chatomon.providers.base import (
    ChatEvent,
    DoneEvent,
    Message,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
    decode_arguments,
)
from chatomon.providers.shared_format import function_tools, plain

__all__ = [
    "CONTEXT_CODES",
    "ChatStreamReader",
    "ResponsesStreamReader",
    "chat_request",
    "error_for_code",
    "responses_request",
]

CONTEXT_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
"""Error codes/types meaning "too long": OpenAI's code and llama.cpp server's error type."""


def _arguments(arguments: Mapping[str, Any]) -> str:
    return json.dumps(plain(arguments), default=str)


def _chat_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The Chat Completions `messages` list for a neutral history."""
    native: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            native.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
            )
        elif message.role == "assistant" and message.tool_calls:
            native.append(
                {
                    "role": "assistant",
                    # The API wants null, not "", beside tool calls when there is no text.
                    "content": message.content or None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": _arguments(call.args),
                            },
                        }
                        for call in message.tool_calls
                    ],
                }
            )
        else:
            native.append({"role": message.role, "content": message.content})
    return native


def _responses_input(messages: Sequence[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """The Responses API `instructions` and `input` items for a neutral history.

    Leading system messages become `instructions`; a system message later in the history
    stays in place as a system input item, so its position keeps its meaning.
    """
    leading: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system" and not items:
            leading.append(message.content)
        elif message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": message.content,
                }
            )
        else:
            if message.content or not message.tool_calls:
                items.append({"role": message.role, "content": message.content})
            items.extend(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": _arguments(call.args),
                }
                for call in message.tool_calls
            )
    return ("\n\n".join(leading) if leading else None), items


def _responses_tools(tools: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    """The Responses API `tools` list (non-strict: chatomon schemas need not be closed)."""
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": plain(tool.input_schema),
            "strict": False,
        }
        for tool in tools
    ]


def chat_request(
    settings: Mapping[str, Any], messages: Sequence[Message], tools: Sequence[ToolDefinition]
) -> dict[str, Any]:
    """The keyword arguments of `client.chat.completions.create` for one completion."""
    request: dict[str, Any] = {
        "model": settings["model"],
        "messages": _chat_messages(messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if tools:
        request["tools"] = function_tools(tools)
    if settings["temperature"] is not None:
        request["temperature"] = settings["temperature"]
    if settings["max_tokens"] is not None:
        # OpenAI deprecated max_tokens (its reasoning models reject it); compatible servers
        # such as llama-server know max_tokens.
        key = "max_completion_tokens" if settings["base_url"] is None else "max_tokens"
        request[key] = settings["max_tokens"]
    return request


def responses_request(
    settings: Mapping[str, Any], messages: Sequence[Message], tools: Sequence[ToolDefinition]
) -> dict[str, Any]:
    """The keyword arguments of `client.responses.create` for one completion.

    `store` is False: the whole history is sent each time, so OpenAI need not keep it.
    """
    instructions, items = _responses_input(messages)
    request: dict[str, Any] = {
        "model": settings["model"],
        "input": items,
        "stream": True,
        "store": False,
    }
    if instructions is not None:
        request["instructions"] = instructions
    if tools:
        request["tools"] = _responses_tools(tools)
    if settings["temperature"] is not None:
        request["temperature"] = settings["temperature"]
    if settings["max_tokens"] is not None:
        request["max_output_tokens"] = settings["max_tokens"]
    return request


def error_for_code(code: str | None, *, provider: str, where: str) -> ProviderError:
    """A typed error for a vendor error *code* reported without an HTTP status (mid-stream).

    The vendor's message is left out on purpose: it may echo the conversation.
    """
    label = str(code or "no code")[:60]  # a label from the vendor: keep it short
    message = f"{provider} reported an error {where} ({label})"
    if code == "rate_limit_exceeded":
        return ProviderRateLimitError(message, provider=provider)
    if code in CONTEXT_CODES:
        return ProviderContextLengthError(message, provider=provider)
    if code == "invalid_api_key":
        return ProviderAuthError(message, provider=provider)
    if code is None or code in {"server_error", "overloaded", "service_unavailable"}:
        return ProviderUnavailableError(message, provider=provider)
    return ProviderBadRequestError(message, provider=provider)


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


class _Calls:
    """Tool-call fragments keyed by stream index, emitted once each, in index order."""

    def __init__(self, provider: str, new_id: Callable[[], str]) -> None:
        self._provider = provider
        self._new_id = new_id
        self._pending: dict[int, _PendingCall] = {}

    def add(self, key: int, call_id: Any, name: Any, arguments: Any, *, whole: bool) -> None:
        """Record a fragment; `whole` values (complete items) replace what came before."""
        pending = self._pending.setdefault(key, _PendingCall())
        if whole:
            pending.id, pending.name = call_id or pending.id, name or pending.name
            pending.arguments = pending.arguments if arguments is None else arguments
        else:
            # Some compatible servers repeat the id and name in every fragment: keep the first.
            pending.id, pending.name = pending.id or call_id or "", pending.name or name or ""
            pending.arguments += arguments or ""

    def pop(self, key: int) -> list[ChatEvent]:
        pending = self._pending.pop(key, None)
        return [] if pending is None else [self._event(pending)]

    def drain(self) -> list[ChatEvent]:
        return [self._event(self._pending.pop(key)) for key in sorted(self._pending)]

    def _event(self, pending: _PendingCall) -> ToolCallEvent:
        if not pending.name:
            raise ProviderProtocolError(
                f"{self._provider} streamed a tool call without a name", provider=self._provider
            )
        arguments = decode_arguments(pending.arguments, provider=self._provider, tool=pending.name)
        return ToolCallEvent(id=pending.id or self._new_id(), name=pending.name, args=arguments)


class ChatStreamReader:
    """Turns `chat.completion.chunk` objects into chatomon events.

    Text is yielded as it arrives; tool calls are assembled from their fragments (keyed by
    `index`) and yielded when `finish_reason` is "tool_calls" or when the stream ends.
    """

    def __init__(self, provider: str, new_id: Callable[[], str]) -> None:
        self._calls = _Calls(provider, new_id)
        self._usage = TokenUsage()

    def read(self, chunk: Any) -> list[ChatEvent]:
        """The events one chunk carries."""
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._usage = TokenUsage(
                input_tokens=getattr(usage, "prompt_tokens", None) or 0,
                output_tokens=getattr(usage, "completion_tokens", None) or 0,
            )
        events: list[ChatEvent] = []
        for choice in getattr(chunk, "choices", None) or ():
            delta = getattr(choice, "delta", None)
            # A refusal is the model's answer too: show it as text rather than drop it.
            texts = (getattr(delta, "content", None), getattr(delta, "refusal", None))
            events.extend(TextChunkEvent(content=text) for text in texts if text)
            for position, fragment in enumerate(getattr(delta, "tool_calls", None) or ()):
                function = getattr(fragment, "function", None)
                index = getattr(fragment, "index", None)
                self._calls.add(
                    position if index is None else index,
                    getattr(fragment, "id", None),
                    getattr(function, "name", None),
                    getattr(function, "arguments", None),
                    whole=False,
                )
            if getattr(choice, "finish_reason", None) == "tool_calls":
                events.extend(self._calls.drain())
        return events

    def finish(self) -> list[ChatEvent]:
        """The events left when the stream ends: pending tool calls, then the DoneEvent."""
        return [*self._calls.drain(), DoneEvent(usage=self._usage)]


class ResponsesStreamReader:
    """Turns Responses API stream events into chatomon events.

    Text deltas are yielded as they arrive; a function call is yielded when its output item
    is done. `response.failed` and `error` events raise typed ProviderErrors.
    """

    def __init__(self, provider: str, new_id: Callable[[], str]) -> None:
        self._provider = provider
        self._calls = _Calls(provider, new_id)
        self._usage = TokenUsage()
        self._finished = False

    def read(self, event: Any) -> list[ChatEvent]:
        """The events one stream event carries."""
        kind = getattr(event, "type", None)
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            return [TextChunkEvent(content=event.delta)] if event.delta else []
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = event.item
            if getattr(item, "type", None) != "function_call":
                return []
            self._calls.add(
                event.output_index,
                getattr(item, "call_id", None),
                getattr(item, "name", None),
                getattr(item, "arguments", None),
                whole=True,
            )
            return self._calls.pop(event.output_index) if kind.endswith(".done") else []
        if kind == "response.function_call_arguments.delta":
            self._calls.add(event.output_index, None, None, event.delta, whole=False)
        elif kind == "response.function_call_arguments.done":
            self._calls.add(event.output_index, None, None, event.arguments, whole=True)
        elif kind in ("response.completed", "response.incomplete"):
            self._finished = True
            usage = getattr(event.response, "usage", None)
            if usage is not None:
                self._usage = TokenUsage(
                    input_tokens=getattr(usage, "input_tokens", None) or 0,
                    output_tokens=getattr(usage, "output_tokens", None) or 0,
                )
        elif kind == "response.failed":
            error = getattr(event.response, "error", None)
            code = getattr(error, "code", None)
            raise error_for_code(code, provider=self._provider, where="in response.failed")
        elif kind == "error":
            code = getattr(event, "code", None)
            raise error_for_code(code, provider=self._provider, where="in an error event")
        return []

    def finish(self) -> list[ChatEvent]:
        """The events left when the stream ends: pending tool calls, then the DoneEvent."""
        if not self._finished:
            # The Responses API always ends with a terminal event; without one the answer
            # may be cut short, so it must not pass as complete.
            raise ProviderProtocolError(
                f"{self._provider} ended the stream before response.completed",
                provider=self._provider,
            )
        return [*self._calls.drain(), DoneEvent(usage=self._usage)]
