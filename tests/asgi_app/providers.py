"""`RulesProvider`: a deterministic provider that answers by rules on the user's message.

Selectable by dotted path (`tests.asgi_app.providers.RulesProvider`), so that server
processes started by the tests answer predictably. Rules, on the latest user message:

- `mutate <mutation> <JSON input>`: one `mutate` tool call;
- `query <Manager>`: one `query` tool call for the names of that manager's records;
- `slow <seconds> <text>`: wait, then answer like an echo;
- `drip <seconds> <text>`: stream "<text> <i>" once a second for that many seconds;
- `fail`: raise (the turn ends with chat_error);
- `tokens <n>`: answer "ok" reporting n input and n output tokens;
- anything else: "Echo: <text>" in two chunks.

After a tool result, it answers "Tool said: <result>". `delay_seconds` in the provider
config adds latency before every completion (the load benchmark uses 0.2 s).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

from chatomon.providers.base import (
    BaseLLMProvider,
    ChatEvent,
    DoneEvent,
    Message,
    TextChunkEvent,
    ToolCallEvent,
    ToolDefinition,
)
from chatomon.schemas import TokenUsage


class RulesProvider(BaseLLMProvider):
    """Answers by the rules of the module docstring."""

    name = "rules"
    default_config: ClassVar[Mapping[str, Any]] = MappingProxyType({"delay_seconds": 0.0})

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        delay = float(self.settings["delay_seconds"])
        if delay:
            await asyncio.sleep(delay)
        last = messages[-1] if messages else Message.user("")
        if last.role == "tool":
            yield TextChunkEvent(content=f"Tool said: {last.content[:200]}")
            yield DoneEvent(usage=TokenUsage(input_tokens=1, output_tokens=1))
            return
        async for event in self._answer(last.content, len(messages)):
            yield event

    async def _answer(self, text: str, number: int) -> AsyncIterator[ChatEvent]:
        command, _, rest = text.strip().partition(" ")
        usage = TokenUsage(input_tokens=1, output_tokens=1)
        if command == "mutate":
            mutation, _, payload = rest.partition(" ")
            arguments = {"mutation": mutation, "input": json.loads(payload or "{}")}
            yield ToolCallEvent(id=f"call-{number}", name="mutate", arguments=arguments)
        elif command == "query":
            arguments = {"manager": rest.strip(), "fields": ["name"]}
            yield ToolCallEvent(id=f"call-{number}", name="query", arguments=arguments)
        elif command == "slow":
            seconds, _, said = rest.partition(" ")
            await asyncio.sleep(float(seconds))
            yield TextChunkEvent(content=f"Echo: {said}")
        elif command == "drip":
            seconds, _, said = rest.partition(" ")
            for second in range(int(seconds)):
                await asyncio.sleep(1)
                yield TextChunkEvent(content=f"{said} {second + 1} ")
        elif command == "fail":
            raise RuntimeError("the rules provider was told to fail")
        elif command == "tokens":
            count = int(rest.strip() or "0")
            usage = TokenUsage(input_tokens=count, output_tokens=count)
            yield TextChunkEvent(content="ok")
        else:
            yield TextChunkEvent(content="Echo: ")
            yield TextChunkEvent(content=text)
        yield DoneEvent(usage=usage)
