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
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Generic, Literal, TypeVar

from chatomon.errors import ProviderProtocolError
from chatomon.providers.config import ProviderConfig, check_config, check_config_keys
from chatomon.schemas import TokenUsage

__all__ = [
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

Role = Literal["system", "user", "assistant", "tool"]
C = TypeVar("C")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the assistant requested, as kept in the history."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored with conversations and suspended turns."""
        return {"id": self.id, "name": self.name, "arguments": dict(self.arguments)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        """The tool call `to_dict` gave."""
        return cls(id=data["id"], name=data["name"], arguments=dict(data["arguments"]))


@dataclass(frozen=True, slots=True)
class Message:
    """Provider-neutral chat history, including structured tool exchanges.

    Attributes:
        role: "system", "user", "assistant" or "tool".
        content: The text (for a tool message, the tool result as JSON text).
        tool_calls: On an assistant message, the tool calls it requested.
        tool_call_id: On a tool message, the id of the call it answers.
        name: On a tool message, the name of the tool that ran.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only assistant messages carry tool_calls")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id of the call it answers")
        if self.role != "tool" and self.tool_call_id is not None:
            raise ValueError("only tool messages carry a tool_call_id")

    @classmethod
    def system(cls, content: str) -> Message:
        """A system instruction."""
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        """A user message."""
        return cls(role="user", content=content)

    @classmethod
    def assistant(cls, content: str = "", tool_calls: Sequence[ToolCall] = ()) -> Message:
        """An assistant message, optionally with the tool calls it requested."""
        return cls(role="assistant", content=content, tool_calls=tuple(tool_calls))

    @classmethod
    def tool_result(cls, call: ToolCall, result: Any) -> Message:
        """The result of `call`, serialized as JSON text."""
        content = result if isinstance(result, str) else json.dumps(result, default=str)
        return cls(role="tool", content=content, tool_call_id=call.id, name=call.name)


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """Provider-agnostic tool schema exposed to an LLM provider.

    Attributes:
        name: The tool name the model calls.
        description: What the tool does, written for the model.
        parameters: JSON Schema of the arguments: an object schema without `$ref` or
            `oneOf`, so that every vendor accepts it.
    """

    name: str
    description: str
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


@dataclass(frozen=True, slots=True)
class TextChunkEvent:
    """Streaming assistant text emitted by a provider."""

    content: str
    type: ClassVar[str] = "text_chunk"


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """Provider request to execute one configured chat tool."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    type: ClassVar[str] = "tool_call"


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """Terminal provider event carrying optional usage metadata."""

    usage: TokenUsage = field(default_factory=TokenUsage)
    type: ClassVar[str] = "done"


ChatEvent = TextChunkEvent | ToolCallEvent | DoneEvent


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
