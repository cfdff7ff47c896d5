"""One planned provider request: either text or exactly one tool call, within a time cap.

Every planned role (planner, executors, synthesizer, fallback) talks to its provider
through this module. `chatomon.providers.contract.run_completion` already enforces the
provider contract (one DoneEvent, first-event and stream timeouts); on top of it a
planned round is capped as a whole by `timeout_seconds` (the caller passes what is left
of its stage's deadline) and must carry text or one tool call, never both.

`prompt_chars` measures what a request sends: the text of every message (and the JSON
of the tool calls an assistant message replays) plus each tool definition's JSON. The
planned-read budget (a toy read sends at most 15,000 such characters) is counted in it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, ClassVar

from chatomon.errors import ConfigurationError
from chatomon.providers.base import (
    ChatEvent,
    DoneEvent,
    Message,
    TextChunkEvent,
    TokenUsage,
    ToolCall,
    ToolCallEvent,
    ToolDefinition,
)
from chatomon.providers.contract import provider_label, run_completion

__all__ = [
    "InvalidProviderRoundError",
    "ProviderRoundResult",
    "complete_provider_round",
    "prompt_chars",
    "role_provider",
    "stream_provider_round",
]


class InvalidProviderRoundError(ValueError):
    """Raised when a provider stream cannot represent one planned round.

    Its message names what was wrong (for logs); clients see only `public_reason`.
    """

    public_reason: ClassVar[str] = "provider_failed"


@dataclass(frozen=True, slots=True)
class ProviderRoundResult:
    """The only valid outcomes of one planned provider request.

    Attributes:
        text: The text the provider wrote, when it answered in text (else None).
        tool_call: The one tool call it requested, when it called a tool (else None).
        usage: The usage its DoneEvent reported.
        prompt_chars: Characters the request sent (`prompt_chars`).
        duration_ms: From the request to its DoneEvent.
    """

    text: str | None
    tool_call: ToolCall | None
    usage: TokenUsage
    prompt_chars: int
    duration_ms: float


def role_provider(providers: Mapping[str, Any], role: str) -> Any:
    """The provider of a planned role; a ConfigurationError names a role without one."""
    try:
        return providers[role]
    except KeyError:
        raise ConfigurationError(
            f"no provider for the planned role {role!r}",
            field="providers",
            value=role,
            allowed=sorted(providers),
        ) from None


def prompt_chars(messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> int:
    """Characters one request sends: message texts, replayed tool calls, tool definitions.

    Examples:
        >>> prompt_chars([Message.system("Be brief."), Message.user("Hi")], [])
        11
    """
    total = 0
    for message in messages:
        total += len(message.content)
        total += sum(len(_compact(call.to_dict())) for call in message.tool_calls)
    for tool in tools:
        definition = {
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool.input_schema,
        }
        total += len(_compact(definition))
    return total


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


async def _capped_events(
    provider: Any,
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    timeout_seconds: float | None,
) -> AsyncGenerator[ChatEvent, None]:
    """The contract-checked events of one completion, all within `timeout_seconds`.

    The cap wraps each wait for an event rather than the generator as a whole: a timeout
    scope must not stay open across a `yield`, where the consumer's own awaits run.
    """
    loop = asyncio.get_running_loop()
    deadline = None if timeout_seconds is None else loop.time() + timeout_seconds
    # The provider's own first-event and stream timeouts stay as they are (run_completion).
    async with aclosing(run_completion(provider, messages, tools)) as events:
        while True:
            try:
                async with asyncio.timeout_at(deadline) as scope:
                    event = await anext(events)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if scope.expired():
                    label = provider_label(provider)
                    raise TimeoutError(
                        f"{label} did not finish a planned round within {timeout_seconds:g} s"
                    ) from None
                raise  # the provider's own timeout (a ProviderTimeoutError)
            yield event


async def complete_provider_round(
    provider: Any,
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    timeout_seconds: float | None,
) -> ProviderRoundResult:
    """Buffer one bounded provider stream into text or one tool call.

    Args:
        provider: The role's provider.
        messages: The request's history.
        tools: The tools offered (none for the planner and the synthesizer).
        timeout_seconds: Cap of the whole request (None: only the provider's own timeouts).

    Raises:
        InvalidProviderRoundError: Both text and a tool call, neither, or several calls.
        TimeoutError: The cap ran out (a `ProviderTimeoutError` when the provider's
            first-event or stream timeout did).
        ProviderError: The provider failed or broke the stream contract.
    """
    started = time.perf_counter()
    chunks: list[str] = []
    calls: list[ToolCallEvent] = []
    usage = TokenUsage()
    async with aclosing(_capped_events(provider, messages, tools, timeout_seconds)) as events:
        async for event in events:
            if isinstance(event, TextChunkEvent):
                chunks.append(event.content)
            elif isinstance(event, ToolCallEvent):
                calls.append(event)
            elif isinstance(event, DoneEvent):
                usage = event.usage
    text = "".join(chunks)
    _check_outcome(provider, text, len(calls))
    return ProviderRoundResult(
        text=text if not calls else None,
        tool_call=calls[0] if calls else None,
        usage=usage,
        prompt_chars=prompt_chars(messages, tools),
        duration_ms=(time.perf_counter() - started) * 1000,
    )


async def stream_provider_round(
    provider: Any,
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    timeout_seconds: float | None,
) -> AsyncGenerator[str | ProviderRoundResult, None]:
    """Yield a text round's fragments as they arrive, then its `ProviderRoundResult`.

    Used by streamed synthesis: a tool call ends the round at once with
    `InvalidProviderRoundError`, and so does a round that wrote no text (after its
    fragments, which were whitespace only). Errors as `complete_provider_round`.
    """
    started = time.perf_counter()
    chunks: list[str] = []
    usage = TokenUsage()
    async with aclosing(_capped_events(provider, messages, tools, timeout_seconds)) as events:
        async for event in events:
            if isinstance(event, ToolCallEvent):
                _check_outcome(provider, "".join(chunks), 1, text_only=True)
            elif isinstance(event, TextChunkEvent):
                if event.content:
                    chunks.append(event.content)
                    yield event.content
            elif isinstance(event, DoneEvent):
                usage = event.usage
    text = "".join(chunks)
    _check_outcome(provider, text, 0)
    yield ProviderRoundResult(
        text=text,
        tool_call=None,
        usage=usage,
        prompt_chars=prompt_chars(messages, tools),
        duration_ms=(time.perf_counter() - started) * 1000,
    )


def _check_outcome(provider: Any, text: str, calls: int, *, text_only: bool = False) -> None:
    """Refuse every round that is not exactly text or exactly one tool call.

    Whitespace alone is no text: a model that writes a newline before its tool call made
    a tool call, and one that writes only blanks answered nothing.
    """
    label = provider_label(provider)
    if text_only and calls:
        raise InvalidProviderRoundError(f"{label} requested a tool call in a text-only round")
    has_text = bool(text.strip())
    if calls > 1:
        raise InvalidProviderRoundError(f"{label} requested {calls} tool calls in one round")
    if calls and has_text:
        raise InvalidProviderRoundError(f"{label} wrote text and requested a tool call")
    if not calls and not has_text:
        raise InvalidProviderRoundError(f"{label} wrote no text and requested no tool call")
