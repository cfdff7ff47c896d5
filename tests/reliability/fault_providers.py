"""Providers for the fault tests, selectable by dotted path in server processes.

`FaultProvider` fails where the turn's user message says (the latest user message, so a
turn resumed after a confirmation reads the message that started it):

- `fail before`: raises before any event;
- `fail after text`: streams two chunks, then fails (the vendor's connection dropped);
- `fail in tool call`: streams a `query` tool call, then fails before its completion ends;
- `fail after tool`: a `query` tool call, then fails in the round after its result;
- `fail after confirm <mutation> <JSON input>`: asks for the mutation, then fails in the
  round after its result (the resumed turn, once the confirmation is decided);
- `hang first`: sends nothing for longer than its `timeout_seconds` (1 s);
- `hang midway`: one chunk, then nothing for longer than its `stream_timeout_seconds` (1 s);
- `unstorable output`: answers `UNSTORABLE_CHUNKS`, text no store can keep (a NUL, an
  unpaired surrogate);
- anything else: "Echo: <text>".

`RaisingProvider` cannot be built (its constructor raises, naming a secret);
`MissingExtraProvider` needs a vendor SDK that is not installed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

from chatomon.errors import ProviderDependencyError, ProviderUnavailableError
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

SECRET = "sk-live-fault-0000"
HANG_SECONDS = 30.0
USAGE = TokenUsage(input_tokens=1, output_tokens=1)
UNSTORABLE_CHUNKS = ("A NUL \x00 and ", "a lone \ud800 surrogate")


class FaultProvider(BaseLLMProvider):
    """Fails where the user message says (see the module docstring)."""

    name = "faults"
    default_config: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {"timeout_seconds": 1.0, "stream_timeout_seconds": 1.0}
    )

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        asked = next((m.content for m in reversed(messages) if m.role == "user"), "")
        after_tool = bool(messages) and messages[-1].role == "tool"
        if asked.startswith("fail after confirm"):
            if after_tool:
                raise ProviderUnavailableError(f"vendor down ({SECRET})", provider=self.name)
            mutation, _, payload = asked.removeprefix("fail after confirm ").partition(" ")
            arguments = {"mutation": mutation, "input": json.loads(payload or "{}")}
            yield ToolCallEvent(id="call-confirm", name="mutate", arguments=arguments)
            yield DoneEvent(usage=USAGE)
            return
        if asked == "fail after tool":
            if after_tool:
                raise ProviderUnavailableError(f"vendor down ({SECRET})", provider=self.name)
            yield _query()
            yield DoneEvent(usage=USAGE)
            return
        async for event in self._once(asked):
            yield event

    async def _once(self, asked: str) -> AsyncIterator[ChatEvent]:
        if asked == "fail before":
            raise RuntimeError(f"the provider broke ({SECRET})")
        if asked == "fail after text":
            yield TextChunkEvent(content="Partial ")
            yield TextChunkEvent(content="answer")
            raise ProviderUnavailableError(f"connection reset ({SECRET})", provider=self.name)
        if asked == "fail in tool call":
            yield _query()
            raise ProviderUnavailableError(f"connection reset ({SECRET})", provider=self.name)
        if asked == "hang first":
            await asyncio.sleep(HANG_SECONDS)
        if asked == "unstorable output":
            for chunk in UNSTORABLE_CHUNKS:
                yield TextChunkEvent(content=chunk)
            yield DoneEvent(usage=USAGE)
            return
        if asked == "hang midway":
            yield TextChunkEvent(content="Partial ")
            await asyncio.sleep(HANG_SECONDS)
        yield TextChunkEvent(content=f"Echo: {asked}")
        yield DoneEvent(usage=USAGE)


def _query() -> ToolCallEvent:
    arguments = {"manager": "PartManager", "fields": ["name"]}
    return ToolCallEvent(id="call-query", name="query", arguments=arguments)


class RaisingProvider(BaseLLMProvider):
    """A provider whose constructor raises (a bad key file, an unreachable local model)."""

    name = "raising"

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        raise RuntimeError(f"cannot load the model with key {SECRET}")

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        raise AssertionError("never built")
        yield  # pragma: no cover - an async generator


class MissingExtraProvider(BaseLLMProvider):
    """A provider whose vendor SDK is not installed (the chatomon extra is missing)."""

    name = "missing-extra"

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        raise ProviderDependencyError("vendor_sdk_not_installed", "vendor")

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        raise AssertionError("never built")
        yield  # pragma: no cover - an async generator
