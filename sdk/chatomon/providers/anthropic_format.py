"""Translation between chatomon and the Anthropic Messages API, without the SDK.

Private helper of `chatomon.providers.anthropic`: the history and tools as plain
JSON-ready request parameters, the raw stream events back as chatomon events, and vendor
error bodies as typed ProviderErrors. It never imports the vendor SDK; stream events are
read by attribute, so any object shaped like the SDK's raw events works.

Anthropic wants the system prompt beside the conversation (`system`), the assistant's
tool calls as `tool_use` content blocks, and tool results as `tool_result` blocks inside a
*user* message; roles must alternate, so consecutive messages of the same role (several
tool results, or tool results followed by the next user message) become one message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from chatomon.errors import (
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderContextLengthError,
    ProviderError,
    ProviderProtocolError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from chatomon.providers.base import (
    ChatEvent,
    Message,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
    decode_arguments,
)
from chatomon.providers.shared_format import retry_after_seconds

__all__ = [
    "NAME",
    "StreamState",
    "anthropic_messages",
    "anthropic_tools",
    "build_request",
    "status_error",
    "system_prompt",
]

NAME = "anthropic"
# Phrases of the 400 invalid_request_error Anthropic sends when the request does not fit
# the context window ("prompt is too long: 208656 tokens > 200000 maximum", "input length
# and `max_tokens` exceed context limit: ...").
_CONTEXT_PHRASES = ("prompt is too long", "exceed context limit", "context window")
_LABEL = re.compile(r"^[A-Za-z0-9_.\-]{1,80}$")
_INPUT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def plain(value: Any) -> Any:
    """`value` with every mapping turned into a dict and every sequence into a list.

    The SDK serializes the body with `json`, which rejects read-only mappings and tuples
    nested inside schemas and tool arguments.
    """
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def system_prompt(messages: Sequence[Message]) -> str:
    """The system messages joined by blank lines ("" when there are none)."""
    return "\n\n".join(m.content for m in messages if m.role == "system" and m.content)


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    """The Anthropic role and content blocks of one non-system message."""
    if message.role == "tool":
        return "user", [
            {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content}
        ]
    # Anthropic rejects empty text blocks, so an assistant turn that only called tools
    # carries just its tool_use blocks.
    blocks: list[dict[str, Any]] = (
        [{"type": "text", "text": message.content}] if message.content else []
    )
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": plain(call.args)}
        for call in message.tool_calls
    )
    return message.role, blocks


def anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation (without system messages) as Anthropic `messages`.

    Consecutive messages of one role are merged, in order; a message that is a single
    text block is sent with plain string content.
    """
    merged: list[tuple[str, list[dict[str, Any]]]] = []
    for message in messages:
        if message.role == "system":
            continue
        role, blocks = _blocks(message)
        if not blocks:
            continue
        if merged and merged[-1][0] == role:
            merged[-1][1].extend(blocks)
        else:
            merged.append((role, blocks))
    result: list[dict[str, Any]] = []
    for role, blocks in merged:
        single_text = len(blocks) == 1 and blocks[0]["type"] == "text"
        result.append({"role": role, "content": blocks[0]["text"] if single_text else blocks})
    return result


def anthropic_tools(tools: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    """Tool definitions as Anthropic `tools` (`input_schema` is the JSON Schema)."""
    return [
        {"name": t.name, "description": t.description, "input_schema": plain(t.input_schema)}
        for t in tools
    ]


def build_request(
    settings: Mapping[str, Any], messages: Sequence[Message], tools: Sequence[ToolDefinition]
) -> dict[str, Any]:
    """Keyword arguments for `AsyncAnthropic().messages.create(..., stream=True)`."""
    request: dict[str, Any] = {
        "model": settings["model"],
        "max_tokens": int(settings["max_tokens"]),
        "messages": anthropic_messages(messages),
    }
    system = system_prompt(messages)
    if system:
        request["system"] = system
    if tools:
        request["tools"] = anthropic_tools(tools)
    if settings.get("temperature") is not None:
        # The installed SDK's `create` has no `temperature` keyword; the API still takes
        # the field, so it goes in through `extra_body`.
        request["extra_body"] = {"temperature": float(settings["temperature"])}
    return request


class StreamState:
    """Assembles the raw Messages stream events of one completion into chatomon events.

    Text deltas become TextChunkEvents at once; the `input_json_delta` fragments of each
    `tool_use` block are joined and decoded at its `content_block_stop`; `finished` turns
    true at `message_stop`, after which `usage()` is the completion's usage.
    """

    def __init__(self) -> None:
        self.finished = False
        self._tools: dict[int, tuple[str, str, list[str], Any]] = {}
        self._usage: dict[str, int] = {}
        self._calls = 0

    def feed(self, event: Any) -> list[ChatEvent]:
        """The chatomon events one raw stream event completes (often none)."""
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self._absorb(getattr(getattr(event, "message", None), "usage", None))
        elif kind == "message_delta":
            self._absorb(getattr(event, "usage", None))
        elif kind == "message_stop":
            self.finished = True
        elif kind == "content_block_start":
            block = event.content_block
            # Other blocks (text, thinking, server tools) need no assembly.
            if getattr(block, "type", None) == "tool_use":
                self._calls += 1
                call_id = getattr(block, "id", None) or f"toolu_chatomon_{self._calls}"
                self._tools[event.index] = (call_id, block.name, [], getattr(block, "input", None))
        elif kind == "content_block_delta":
            return self._delta(event)
        elif kind == "content_block_stop" and event.index in self._tools:
            call_id, tool, fragments, initial = self._tools.pop(event.index)
            # The input streams as JSON fragments; a block without any keeps its start input.
            raw = "".join(fragments)
            arguments = decode_arguments(raw or initial or None, provider=NAME, tool=tool)
            return [ToolCallEvent(id=call_id, name=tool, args=arguments)]
        return []

    def _delta(self, event: Any) -> list[ChatEvent]:
        delta = event.delta
        kind = getattr(delta, "type", None)
        if kind == "text_delta" and delta.text:
            return [TextChunkEvent(content=delta.text)]
        if kind == "input_json_delta":
            if event.index not in self._tools:
                raise ProviderProtocolError(
                    "anthropic sent tool input for a block that is not a tool_use block",
                    provider=NAME,
                )
            self._tools[event.index][2].append(delta.partial_json or "")
        return []

    def _absorb(self, usage: Any) -> None:
        # message_delta usage is cumulative, so later values replace earlier ones.
        for field in (*_INPUT_FIELDS, "output_tokens"):
            value = getattr(usage, field, None)
            if isinstance(value, int):
                self._usage[field] = value

    def usage(self) -> TokenUsage:
        """The usage reported so far; cached prompt tokens count as input tokens."""
        return TokenUsage(
            input_tokens=sum(self._usage.get(field, 0) for field in _INPUT_FIELDS),
            output_tokens=self._usage.get("output_tokens", 0),
        )


def status_error(status: int, body: Any, headers: Mapping[str, str]) -> ProviderError:
    """A typed ProviderError for an HTTP error response or an in-stream `error` event.

    Args:
        status: The HTTP status (200 for an `error` event inside a stream).
        body: The decoded error body, `{"type": "error", "error": {"type", "message"}}`.
        headers: The response headers (`retry-after`, `request-id`).
    """
    detail = body.get("error") if isinstance(body, dict) else None
    detail = detail if isinstance(detail, dict) else {}
    kind = detail.get("type")
    kind = kind if isinstance(kind, str) else ""
    text = str(detail.get("message") or "").lower()
    in_stream = status < 400
    cls = _error_class(status, kind, text)
    request_id = headers.get("request-id") or (body.get("request_id") if detail else None)
    labels = [kind if _LABEL.match(kind) else "unknown error"]
    labels.append("during the stream" if in_stream else f"HTTP {status}")
    if isinstance(request_id, str) and _LABEL.match(request_id):
        labels.append(f"request {request_id}")
    # The vendor's message is only matched, never copied: it may quote the request.
    return cls(
        f"anthropic {_PHRASES[cls]} ({', '.join(labels)})",
        provider=NAME,
        status_code=None if in_stream else status,
        retry_after_seconds=retry_after_seconds(headers) if cls is ProviderRateLimitError else None,
    )


def _error_class(status: int, kind: str, text: str) -> type[ProviderError]:
    if status in (401, 403) or kind in ("authentication_error", "permission_error"):
        return ProviderAuthError
    if status == 429 or kind == "rate_limit_error":
        return ProviderRateLimitError
    too_long = any(phrase in text for phrase in _CONTEXT_PHRASES)
    if status == 413 or kind == "request_too_large" or (too_long and status in (200, 400)):
        return ProviderContextLengthError
    if status == 408:
        return ProviderTimeoutError
    if 400 <= status < 500 or kind in ("invalid_request_error", "not_found_error", "billing_error"):
        return ProviderBadRequestError
    return ProviderUnavailableError  # 5xx, 529 overloaded_error, api_error, unknown in-stream


_PHRASES: Mapping[type[ProviderError], str] = {
    ProviderAuthError: "refused the credentials",
    ProviderRateLimitError: "rate-limited the request",
    ProviderContextLengthError: "rejected the request as longer than the context window",
    ProviderTimeoutError: "timed out the request",
    ProviderBadRequestError: "rejected the request as invalid",
    ProviderUnavailableError: "is unavailable or failed",
}
