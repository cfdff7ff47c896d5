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


class RoleProvider(BaseLLMProvider):
    """Plays one role of a planned turn, named by `role` in its config (planned transport tests).

    - planner: a read plan with one task per `<Name>Manager` word of the user's message
      (`parts` for PartManager...), or a mutation plan when the message starts with "mutate";
    - simple_executor, complex_executor, fallback_executor: a `query` of the names of the
      manager its task names (`manager` hint);
    - synthesizer: "Planned answer from <n> results." (n: the evidence items it was given).
    """

    name = "role"
    default_config: ClassVar[Mapping[str, Any]] = MappingProxyType({"role": "planner"})

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        role = str(self.settings["role"])
        prompt = "\n".join(m.content for m in messages)
        usage = TokenUsage(input_tokens=2, output_tokens=1)
        if role == "planner":
            yield TextChunkEvent(content=json.dumps(_plan(messages[-1].content)))
        elif role == "synthesizer":
            found = prompt.count('"name"')
            yield TextChunkEvent(content="Planned answer ")
            yield TextChunkEvent(content=f"from {found} results.")
        else:
            manager = next(
                word.strip('".,:')
                for word in prompt.split()
                if word.strip('".,:').endswith("Manager") and word.strip('".,:') != "Manager"
            )
            yield ToolCallEvent(
                id="q1", name="query", args={"manager": manager, "fields": ["name"]}
            )
        yield DoneEvent(usage=usage)


def _plan(text: str) -> dict[str, Any]:
    if text.strip().startswith("mutate"):
        return {"intent": "mutation"}
    managers = [w.strip(".,?") for w in text.split() if w.strip(".,?").endswith("Manager")]
    tasks = [
        {
            "id": f"t{number}",
            "question": f"List the {manager} records",
            "manager": manager,
            "needs": [{"kind": "query"}],
        }
        for number, manager in enumerate(managers or ["PartManager"], start=1)
    ]
    return {"intent": "read", "tasks": tasks}
