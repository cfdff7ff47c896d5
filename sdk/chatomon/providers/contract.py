"""Running one completion under the provider contract and the two timeouts.

Every caller of a provider (the provider nucleus, the tool loop, summaries) goes through
`run_completion`, so a custom provider gets the same guarantees as a built-in one:
the first event arrives within `timeout_seconds`, later events within
`stream_timeout_seconds`, exactly one DoneEvent ends the stream, tool-call arguments are
mappings. Anything else is a ProviderError with a stable `public_reason`. Text no store
can keep (NUL, an unpaired surrogate) is replaced with U+FFFD here, where every model
text enters chatomon: text chunks, and a tool call's id, name and arguments
(`chatomon.storable`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

from chatomon._engine.closing import close_stream
from chatomon.errors import ProviderProtocolError, ProviderTimeoutError
from chatomon.providers.base import (
    ChatEvent,
    DoneEvent,
    Message,
    TextChunkEvent,
    ToolCallEvent,
    ToolDefinition,
)
from chatomon.storable import storable, storable_value

__all__ = ["DEFAULT_STREAM_TIMEOUT_SECONDS", "DEFAULT_TIMEOUT_SECONDS", "run_completion"]

DEFAULT_TIMEOUT_SECONDS = 60.0
"""Wait for the first event of a completion (the seed's `timeout_seconds`)."""
DEFAULT_STREAM_TIMEOUT_SECONDS = 30.0
"""Wait between later events of a completion (the seed's `stream_timeout_seconds`)."""


def provider_label(provider: Any) -> str:
    """The short name used in errors and logs."""
    return str(getattr(provider, "name", None) or type(provider).__name__)


async def run_completion(
    provider: Any,
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    *,
    timeout_seconds: float | None = None,
    stream_timeout_seconds: float | None = None,
) -> AsyncGenerator[ChatEvent, None]:
    """Yield the events of `provider.complete(messages, tools)`, enforcing the contract.

    The timeouts default to the provider's own `timeout_seconds` / `stream_timeout_seconds`
    settings when it has them, else to 60 s and 30 s.
    """
    label = provider_label(provider)
    settings: Mapping[str, Any] = getattr(provider, "settings", None) or {}
    first_wait = timeout_seconds or settings.get("timeout_seconds") or DEFAULT_TIMEOUT_SECONDS
    next_wait = (
        stream_timeout_seconds
        or settings.get("stream_timeout_seconds")
        or DEFAULT_STREAM_TIMEOUT_SECONDS
    )
    stream = provider.complete(list(messages), list(tools))
    try:
        wait = float(first_wait)
        received = done = False
        while True:
            deadline = asyncio.timeout(wait)
            try:
                async with deadline:
                    event = await anext(stream)
            except StopAsyncIteration:
                break
            except TimeoutError:
                if not deadline.expired():
                    raise  # the provider's own timeout error, with its own details
                if done:
                    break  # the answer is complete; a provider slow to close is not an error
                which = "next event" if received else "first event"
                raise ProviderTimeoutError(
                    f"{label} sent no {which} within {wait:g} s", provider=label
                ) from None
            if done:
                raise ProviderProtocolError(
                    f"{label} sent a {type(event).__name__} after its done event", provider=label
                )
            yield _checked(event, label)
            done = isinstance(event, DoneEvent)
            received = True
            wait = float(next_wait)
        if not done:
            raise ProviderProtocolError(
                f"{label} ended the stream without a done event", provider=label
            )
    finally:
        await close_stream(stream)


def _checked(event: Any, label: str) -> ChatEvent:
    if isinstance(event, TextChunkEvent):
        kept = storable(event.content) if isinstance(event.content, str) else event.content
        return event if kept is event.content else TextChunkEvent(kept)
    if isinstance(event, DoneEvent):
        return event
    if isinstance(event, ToolCallEvent):
        if not isinstance(event.args, Mapping):
            raise ProviderProtocolError(
                f"{label} sent tool call {event.name!r} with arguments that are not a mapping",
                provider=label,
            )
        # Stored with the assistant's message (PostgreSQL's jsonb refuses a NUL as well).
        call_id, name, args = (storable_value(part) for part in (event.id, event.name, event.args))
        if call_id is event.id and name is event.name and args is event.args:
            return event
        return ToolCallEvent(id=call_id, name=name, args=args)
    raise ProviderProtocolError(
        f"{label} yielded {type(event).__name__}; providers yield TextChunkEvent, "
        "ToolCallEvent and DoneEvent",
        provider=label,
    )
