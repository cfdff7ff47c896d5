"""Providers the eval CLI tests name by dotted path."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from chatomon.providers.base import (
    BaseLLMProvider,
    ChatEvent,
    DoneEvent,
    Message,
    TextChunkEvent,
    ToolDefinition,
)
from chatomon.schemas import TokenUsage


class Shrugging(BaseLLMProvider):
    """Calls no tool and answers every question the same way."""

    name = "shrugging"

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        yield TextChunkEvent(content="No idea.")
        yield DoneEvent(usage=TokenUsage(input_tokens=1000, output_tokens=500))
