"""The provider protocol: provider-neutral history, tools, events and the base class.

A provider adapts one LLM vendor. It is built with no arguments (or from a config mapping),
and `complete(messages, tools)` streams one completion as events: `TextChunkEvent`s,
`ToolCallEvent`s, then exactly one terminal `DoneEvent` carrying the usage.

```python
from collections.abc import AsyncIterator
from chatomon.providers.base import BaseLLMProvider, ChatEvent, DoneEvent, TextChunkEvent

class EchoProvider(BaseLLMProvider):
    name = "echo"

    async def complete(self, messages, tools) -> AsyncIterator[ChatEvent]:
        yield TextChunkEvent(content=messages[-1].content)
        yield DoneEvent()
```

The history, tool and event values live in `chatomon.providers.protocol` and are imported
from here, under the reference's names (`ToolDefinition.input_schema`, `ToolCallEvent.args`,
`Message.tool_name` / `tool_result`, `TOOL_RESULT_MISSING`); chatomon's earlier names
(`parameters`, `arguments`, `name`) are exact aliases.

Vendor SDK types never leave the vendor's module: adapters translate this history to the
SDK's native tool-call and tool-result format and translate the stream back.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar, Generic, TypeVar

from chatomon.errors import ProviderProtocolError
from chatomon.providers.config import ProviderConfig, check_config, check_config_keys
from chatomon.providers.protocol import (
    TOOL_RESULT_MISSING,
    ChatEvent,
    DoneEvent,
    Message,
    TextChunkEvent,
    ToolCall,
    ToolCallEvent,
    ToolDefinition,
)
from chatomon.schemas import TokenUsage

__all__ = [
    "TOOL_RESULT_MISSING",
    "BaseLLMProvider",
    "ChatEvent",
    "ClientsByLoop",
    "DoneEvent",
    "Message",
    "TextChunkEvent",
    "TokenUsage",
    "ToolCall",
    "ToolCallEvent",
    "ToolDefinition",
    "close_client",
    "decode_arguments",
]

C = TypeVar("C")


async def close_client(client: Any) -> None:
    """Close a vendor SDK client, whichever of `aclose()` / `close()` (sync or async) it has."""
    if client is None:
        return
    for name in ("aclose", "close"):
        method = getattr(client, name, None)
        if callable(method):
            result = method()
            if inspect.isawaitable(result):
                await result
            return


class ClientsByLoop(Generic[C]):
    """One vendor SDK client per event loop, made on first use there.

    An async SDK client's pooled connections belong to the loop that opened them, and one
    provider serves several loops: `chat_sync` runs each turn on a fresh one, and under WSGI
    Django runs each async view on a loop of its own. A client is kept as long as its loop
    lives.

    Args:
        make: Makes a client (called on the loop that will use it).
    """

    def __init__(self, make: Callable[[], C]) -> None:
        self._make = make
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, C] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()  # loops of several threads share the mapping

    def get(self) -> C:
        """The running loop's client."""
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.get(loop)
        if client is None:
            client = self._make()
            with self._lock:
                client = self._clients.setdefault(loop, client)
        return client

    async def aclose(self) -> None:
        """Close the running loop's client; a new one is made on next use.

        The clients of other loops are theirs to close: their connections cannot be
        closed from this loop.
        """
        with self._lock:
            client = self._clients.pop(asyncio.get_running_loop(), None)
        await close_client(client)


def decode_arguments(
    raw: str | Mapping[str, Any] | None, *, provider: str, tool: str
) -> dict[str, Any]:
    """Decode a vendor's tool-call arguments into a mapping; malformed JSON is a ProviderError."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ProviderProtocolError(
            f"{provider} returned malformed JSON arguments for tool {tool!r} "
            f"(at character {error.pos})",
            provider=provider,
        ) from None
    if not isinstance(value, dict):
        raise ProviderProtocolError(
            f"{provider} returned tool {tool!r} arguments that are not a JSON object",
            provider=provider,
        )
    return value


class BaseLLMProvider(ABC):
    """Base of the built-in providers: configuration handling and the completion contract.

    Subclasses set `name`, `default_config` (every key they accept, with its default),
    `config_model` (what each key accepts; `chatomon.providers.config`) and
    `required_extra`, and implement `complete`. Construction takes no argument (defaults
    and the SDK's own environment variables), a config mapping, or keyword options:
    `OpenAIProvider()`, `OpenAIProvider.from_config({"model": "gpt-4.1"})` and
    `OpenAIProvider(model="gpt-4.1")` are equivalent ways in.
    """

    name: ClassVar[str] = "provider"
    default_config: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    config_model: ClassVar[type[ProviderConfig] | None] = None
    required_extra: ClassVar[str | None] = None

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        merged = {**(config or {}), **options}
        self.check_keys(merged)
        self._config: Mapping[str, Any] = MappingProxyType(dict(merged))
        self.settings: Mapping[str, Any] = MappingProxyType({**self.default_config, **merged})

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> BaseLLMProvider:
        """Create a provider with a copied profile configuration."""
        return cls(dict(config))

    @property
    def provider_config(self) -> Mapping[str, Any]:
        """The read-only configuration this instance was given (defaults not merged in)."""
        return self._config

    @classmethod
    def check_keys(cls, config: Mapping[str, Any]) -> None:
        """Reject configuration keys this provider does not know, suggesting the closest."""
        check_config_keys(cls.__name__, config, cls.default_config)

    @classmethod
    def check_values(cls, config: Mapping[str, Any]) -> None:
        """Validate the values of `config` (over `default_config`) with `config_model`."""
        if cls.config_model is not None:
            check_config(cls.__name__, cls.config_model, {**cls.default_config, **config})

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        """Validate the configuration (and, in vendor adapters, that the SDK is installed)."""
        cls.check_keys(config or {})
        cls.check_values(config or {})

    async def aclose(self) -> None:
        """Release the provider's connections; it opens new ones if used again.

        Adapters keep their vendor SDK client (and its connection pool) between
        completions; call this when the provider is no longer needed. A provider without
        connections has nothing to release.
        """
        return

    @abstractmethod
    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        """Stream one completion: text chunks and tool calls, then one DoneEvent."""

    def __repr__(self) -> str:
        model = self.settings.get("model")
        return f"<{type(self).__name__} model={model!r}>" if model else f"<{type(self).__name__}>"
