"""Deterministic providers for tests, notebooks and benchmarks; no network, no SDK.

`ScriptedProvider` plays a queue of scripted completions and records every request;
`FunctionProvider` lets a function of the request decide each completion.

A completion is written as a list of steps:

- a `str`: a text chunk;
- a `ToolCallEvent`, or `tool_call(name, arguments)` (without an id, each provider numbers
  its calls `call-1`, `call-2`, ... in the order it plays them);
- a `TokenUsage`: the usage of the final DoneEvent;
- `Delay(seconds)`: a pause before the next step;
- an exception instance: raised at that point (before any event when it comes first).

```python
from chatomon.providers.testing import ScriptedProvider, tool_call

provider = ScriptedProvider([
    [tool_call("query", {"manager": "PartManager"})],
    ["Three parts.", TokenUsage(input_tokens=120, output_tokens=4)],
])
```
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import itertools
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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

__all__ = [
    "Completion",
    "Delay",
    "FunctionProvider",
    "ProviderRequest",
    "ScriptError",
    "ScriptedProvider",
    "tool_call",
]


class ScriptError(AssertionError):
    """A scripted provider was used differently from its script."""


@dataclass(frozen=True, slots=True)
class Delay:
    """Pause this many seconds before the next step of a scripted completion."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Completion:
    """One scripted completion: its steps, and whether it ends with a DoneEvent."""

    steps: Sequence[Any]
    done: bool = True


@dataclass(frozen=True, slots=True)
class ProviderRequest:
    """What a test provider received for one completion."""

    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...]

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered."""
        return [tool.name for tool in self.tools]


def tool_call(
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    id: str = "",
) -> ToolCallEvent:
    """A scripted tool call; without `id` the provider numbers it when it plays it."""
    return ToolCallEvent(id=id, name=name, args=dict(arguments or {}))


ScriptItem = Completion | Sequence[Any] | BaseException | str


class _Player:
    """Turns the steps of one completion into events, with the simulated latency."""

    def __init__(self, first_event_delay: float, chunk_delay: float) -> None:
        self.first_event_delay = first_event_delay
        self.chunk_delay = chunk_delay
        self.call_numbers = itertools.count(1)

    async def play(self, item: ScriptItem) -> AsyncIterator[ChatEvent]:
        completion = _as_completion(item)
        usage = TokenUsage()
        if self.first_event_delay:
            await asyncio.sleep(self.first_event_delay)
        for index, step in enumerate(completion.steps):
            if isinstance(step, Delay):
                await asyncio.sleep(step.seconds)
            elif isinstance(step, BaseException):
                raise step
            elif isinstance(step, TokenUsage):
                usage = usage + step
            else:
                if index and self.chunk_delay:
                    await asyncio.sleep(self.chunk_delay)
                yield self._numbered(_as_event(step))
        if completion.done:
            yield DoneEvent(usage=usage)

    def _numbered(self, event: ChatEvent) -> ChatEvent:
        if isinstance(event, ToolCallEvent) and not event.id:
            return dataclasses.replace(event, id=f"call-{next(self.call_numbers)}")
        return event


def _as_completion(item: ScriptItem) -> Completion:
    if isinstance(item, Completion):
        return item
    if isinstance(item, BaseException | str):
        return Completion([item])
    return Completion(list(item))


def _as_event(step: Any) -> ChatEvent:
    if isinstance(step, str):
        return TextChunkEvent(content=step)
    if isinstance(step, TextChunkEvent | ToolCallEvent | DoneEvent):
        return step
    raise ScriptError(f"cannot script a step of type {type(step).__name__}")


class ScriptedProvider(BaseLLMProvider):
    """Plays scripted completions in order and records each request.

    Args:
        script: One item per expected completion (see the module docstring).
        first_event_delay: Simulated latency before the first event of every completion.
        chunk_delay: Simulated latency between events.

    A request beyond the script raises `ScriptError`; `assert_consumed()` (or leaving a
    `with ScriptedProvider(...)` block) fails when scripted completions were never asked for.

    Examples:
        >>> import asyncio
        >>> provider = ScriptedProvider([["Hello", " there"]])
        >>> async def first_completion():
        ...     return [e async for e in provider.complete([Message.user("Hi")], [])]
        >>> [type(e).__name__ for e in asyncio.run(first_completion())]
        ['TextChunkEvent', 'TextChunkEvent', 'DoneEvent']
        >>> provider.assert_consumed()
    """

    name = "scripted"

    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        first_event_delay: float = 0.0,
        chunk_delay: float = 0.0,
    ) -> None:
        super().__init__()
        self.script: list[ScriptItem] = list(script)
        self.requests: list[ProviderRequest] = []
        self._player = _Player(first_event_delay, chunk_delay)

    def add(self, *items: ScriptItem) -> ScriptedProvider:
        """Append completions to the script; returns the provider."""
        self.script.extend(items)
        return self

    @property
    def remaining(self) -> int:
        """Scripted completions not asked for yet."""
        return len(self.script) - len(self.requests)

    def assert_consumed(self) -> None:
        """Fail when scripted completions were never requested."""
        if self.remaining > 0:
            raise ScriptError(
                f"{self.remaining} scripted completion(s) of {len(self.script)} "
                "were never requested"
            )

    def __enter__(self) -> ScriptedProvider:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if exc_info[0] is None:
            self.assert_consumed()

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        """Play the next scripted completion."""
        number = len(self.requests)
        self.requests.append(ProviderRequest(tuple(messages), tuple(tools)))
        if number >= len(self.script):
            raise ScriptError(
                f"ScriptedProvider received request #{number + 1} but only "
                f"{len(self.script)} completion(s) were scripted"
            )
        async for event in self._player.play(self.script[number]):
            yield event


CompletionFunction = Callable[[list[Message], list[ToolDefinition]], Any]


class FunctionProvider(BaseLLMProvider):
    """A provider whose completions a function decides.

    The function receives `(messages, tools)` and returns (or, when async, resolves to) a
    completion in the script format: a string, a list of steps, a `Completion`, or an
    exception to raise.

    Examples:
        >>> import asyncio
        >>> echo = FunctionProvider(lambda messages, tools: ["You said: " + messages[-1].content])
        >>> async def reply():
        ...     return [e async for e in echo.complete([Message.user("hi")], [])]
        >>> asyncio.run(reply())[0].content
        'You said: hi'
    """

    name = "function"

    def __init__(
        self,
        function: CompletionFunction,
        *,
        first_event_delay: float = 0.0,
        chunk_delay: float = 0.0,
    ) -> None:
        super().__init__()
        self.function = function
        self.requests: list[ProviderRequest] = []
        self._player = _Player(first_event_delay, chunk_delay)

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        """Ask the function for the completion and play it."""
        self.requests.append(ProviderRequest(tuple(messages), tuple(tools)))
        item = self.function(list(messages), list(tools))
        if inspect.isawaitable(item):
            item = await item
        async for event in self._player.play(item):
            yield event
