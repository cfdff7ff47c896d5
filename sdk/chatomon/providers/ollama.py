"""The Ollama adapter: `ollama.AsyncClient.chat(stream=True)` against a local or remote server.

```python
from chatomon import Atom
from chatomon.providers import OllamaProvider, ProviderNucleus

provider = OllamaProvider(model="gemma4:e4b", options={"temperature": 0.2})
atom = Atom("assistant", ProviderNucleus(provider))
```

The `ollama` package is imported on first use (`pip install "chatomon[ollama]"`).
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Mapping, Sequence
from types import MappingProxyType, ModuleType
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, StrictBool, StrictStr

from chatomon._validation import Seconds, Text
from chatomon.errors import (
    ConfigurationError,
    ProviderBadRequestError,
    ProviderDependencyError,
    ProviderProtocolError,
)
from chatomon.providers._ollama_format import (
    CallIds,
    base_url_problem,
    stream_error,
    to_ollama_messages,
)
from chatomon.providers.base import (
    BaseLLMProvider,
    ChatEvent,
    ClientsByLoop,
    DoneEvent,
    Message,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
    decode_arguments,
)
from chatomon.providers.config import ProviderConfig
from chatomon.providers.shared_format import function_tools, retry_after_seconds

__all__ = ["OllamaBaseUrlError", "OllamaConfig", "OllamaDependencyImportError", "OllamaProvider"]


class OllamaConfig(ProviderConfig):
    """What each key of an OllamaProvider configuration accepts.

    `base_url` is checked before, by `base_url_problem`, for its own precise error.
    """

    model: Text = Field(description="a non-empty model name such as 'gemma4:e4b'")
    base_url: str = Field(description="an http(s) URL such as 'http://127.0.0.1:11434'")
    timeout_seconds: Seconds = Field(description="a positive number of seconds")
    stream_timeout_seconds: Seconds = Field(description="a positive number of seconds")
    options: Mapping[str, Any] | None = Field(
        description="None or a mapping of Ollama option names to values"
    )
    keep_alive: Annotated[float, Field(strict=True)] | StrictStr | None = Field(
        description="None, a duration such as '5m', or seconds"
    )
    think: StrictBool | Literal["low", "medium", "high"] | None = Field(
        description="None, True, False, 'low', 'medium' or 'high'"
    )


# The SDK's ResponseError carries no headers, so an httpx response hook notes the
# retry-after of a 429 here; a context variable keeps concurrent completions apart.
_RETRY_AFTER: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "chatomon_ollama_retry_after", default=None
)


class OllamaDependencyImportError(ProviderDependencyError):
    """The `ollama` package is not installed: `pip install "chatomon[ollama]"`."""

    def __init__(self) -> None:
        super().__init__("ollama", "ollama")


class OllamaBaseUrlError(ConfigurationError):
    """`base_url` is not an http(s) URL with a host, an optional port and an optional path."""


def _import_sdk() -> tuple[ModuleType, ModuleType]:
    try:
        import httpx  # noqa: PLC0415 - optional SDK (and its transport), imported only when used
        import ollama  # noqa: PLC0415
    except ImportError:
        raise OllamaDependencyImportError() from None
    return ollama, httpx


def _failures(ollama: ModuleType, httpx: ModuleType) -> tuple[type[BaseException], ...]:
    # What the SDK raises while streaming: its own errors, httpx's, OSError from sockets,
    # and ValueError (json / pydantic) or AttributeError for lines that are not chunks.
    return (
        ollama.ResponseError,
        ollama.RequestError,
        httpx.HTTPError,
        OSError,
        ValueError,
        AttributeError,
        TypeError,
    )


async def _note_retry_after(response: Any) -> None:
    if response.status_code == 429:
        _RETRY_AFTER.set(retry_after_seconds(response.headers))


class OllamaProvider(BaseLLMProvider):
    """Chat completions from an Ollama server, streamed over /api/chat as NDJSON.

    Calls `ollama.AsyncClient(host=base_url, timeout=timeout_seconds).chat(model=...,
    messages=[...], tools=[...], stream=True, options=..., keep_alive=..., think=...)`,
    one client per instance (and event loop). Tool calls arrive whole; Ollama gives them
    no ids, so they are numbered `call_1`, `call_2`, ... (skipping ids already in the
    history). Usage comes from the final line's `prompt_eval_count` / `eval_count`.
    Thinking text (`think=True`) is not part of the reply and is not yielded.

    Config keys (defaults): `model` ("gemma4:e4b"), `base_url` ("http://127.0.0.1:11434";
    write the port, `http://host` means port 80), `timeout_seconds` (60; also the HTTP
    timeout), `stream_timeout_seconds` (30), `options` (None; Ollama model options such as
    `{"temperature": 0.2, "num_ctx": 8192}`), `keep_alive` (None; e.g. "5m" or seconds),
    `think` (None; True, False, "low", "medium" or "high"). Ollama needs no key; for
    ollama.com the SDK reads `OLLAMA_API_KEY` from the environment.

    Raises:
        OllamaBaseUrlError: On construction, for an unusable `base_url`.
        ConfigurationError: On construction, for any other bad setting.
    """

    name: ClassVar[str] = "ollama"
    required_extra: ClassVar[str | None] = "ollama"
    config_model = OllamaConfig
    default_config: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {
            "model": "gemma4:e4b",
            "base_url": "http://127.0.0.1:11434",
            "timeout_seconds": 60,
            "stream_timeout_seconds": 30,
            "options": None,
            "keep_alive": None,
            "think": None,
        }
    )

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        super().__init__(config, **options)
        self.check_values(self.settings)
        self._clients: ClientsByLoop[Any] = ClientsByLoop(self._make_client)

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        """Check the keys, that the `ollama` SDK is installed, then every value.

        Raises:
            ConfigurationError: For an unknown key or a bad value.
            OllamaBaseUrlError: For an unusable `base_url`.
            OllamaDependencyImportError: When the `ollama` package is missing.
        """
        cls.check_keys(config or {})
        _import_sdk()
        cls.check_values(config or {})

    @classmethod
    def check_values(cls, config: Mapping[str, Any]) -> None:
        """Validate the values of `config`: `base_url` first, with its precise error.

        Raises:
            OllamaBaseUrlError: For an unusable `base_url`.
            ConfigurationError: For any other bad value.
        """
        problem = base_url_problem({**cls.default_config, **config}["base_url"])
        if problem is not None:
            raise OllamaBaseUrlError(problem[0], field="base_url", value=problem[1])
        super().check_values(config)

    def _make_client(self) -> Any:
        return _import_sdk()[0].AsyncClient(
            host=self.settings["base_url"],
            timeout=float(self.settings["timeout_seconds"]),
            event_hooks={"response": [_note_retry_after]},
        )

    async def aclose(self) -> None:
        """Close this loop's SDK client and its connections (a new one is made on next use)."""
        await self._clients.aclose()

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        """Stream one completion: text chunks, whole tool calls, then one DoneEvent.

        Raises:
            OllamaDependencyImportError: When the `ollama` package is missing.
            ProviderError: A typed subclass for every HTTP, transport or stream failure.
        """
        ollama, httpx = _import_sdk()
        client = self._clients.get()
        ids = CallIds(messages)
        _RETRY_AFTER.set(None)
        try:
            stream = await client.chat(
                model=self.settings["model"],
                messages=to_ollama_messages(messages),
                tools=function_tools(tools),
                stream=True,
                options=self.settings["options"],
                keep_alive=self.settings["keep_alive"],
                think=self.settings["think"],
            )
        except ValueError:  # pydantic refused to build the request: nothing was sent
            raise ProviderBadRequestError(
                "the request could not be encoded for Ollama (check the tool schemas)",
                provider=self.name,
            ) from None
        usage: TokenUsage | None = None
        try:
            while usage is None:
                try:
                    chunk = await anext(stream)
                except StopAsyncIteration:
                    break
                except _failures(ollama, httpx) as error:
                    raise stream_error(
                        error,
                        ollama=ollama,
                        httpx=httpx,
                        model=self.settings["model"],
                        base_url=self.settings["base_url"],
                        retry_after=_RETRY_AFTER.get(),
                    ) from None
                message = chunk.message
                if message.content:
                    yield TextChunkEvent(content=message.content)
                for call in message.tool_calls or ():
                    name = call.function.name
                    arguments = decode_arguments(
                        call.function.arguments, provider=self.name, tool=name
                    )
                    yield ToolCallEvent(id=ids.next(), name=name, args=arguments)
                if chunk.done:
                    usage = TokenUsage(
                        input_tokens=chunk.prompt_eval_count or 0,
                        output_tokens=chunk.eval_count or 0,
                    )
        finally:
            await stream.aclose()
        if usage is None:
            raise ProviderProtocolError(
                "ollama ended the stream without its final done line", provider=self.name
            )
        yield DoneEvent(usage=usage)
