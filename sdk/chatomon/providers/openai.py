"""The OpenAI adapter: Chat Completions or the Responses API, through the `openai` SDK.

```python
from chatomon.providers.openai import OpenAIProvider

provider = OpenAIProvider(model="gpt-4.1-mini")  # the key from OPENAI_API_KEY
local = OpenAIProvider(base_url="http://127.0.0.1:8080/v1", api_key="none", model="local")
```

The SDK is imported on first use; without it, `OpenAIDependencyImportError` names the
extra to install. `base_url` reaches any OpenAI-compatible server (llama.cpp's
llama-server, vLLM, gateways) on the standard `/chat/completions` path.
"""

from __future__ import annotations

import importlib
import itertools
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from chatomon._validation import Secret, Text
from chatomon.errors import (
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderContextLengthError,
    ProviderDependencyError,
    ProviderError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from chatomon.providers.base import (
    BaseLLMProvider,
    ChatEvent,
    ClientsByLoop,
    Message,
    ToolDefinition,
)
from chatomon.providers.config import HostedConfig
from chatomon.providers.openai_format import (
    CONTEXT_CODES,
    ChatStreamReader,
    ResponsesStreamReader,
    chat_request,
    error_for_code,
    responses_request,
)
from chatomon.providers.shared_format import retry_after_seconds

__all__ = ["OpenAIConfig", "OpenAIDependencyImportError", "OpenAIProvider"]


class OpenAIConfig(HostedConfig):
    """What each key of an OpenAIProvider configuration accepts."""

    organization: Annotated[Text | None, Secret()] = Field(description="a non-empty string or None")
    api: Literal["chat", "responses"] = Field(description="'chat' or 'responses'")
    temperature: Annotated[float, Field(strict=True, ge=0, le=2)] | None = Field(
        description="a number from 0 to 2, or None"
    )
    max_tokens: Annotated[int, Field(strict=True, ge=1)] | None = Field(
        description="a whole number of at least 1, or None"
    )


class OpenAIDependencyImportError(ProviderDependencyError):
    """The `openai` package is missing; install it with ``pip install "chatomon[openai]"``."""

    def __init__(self) -> None:
        super().__init__("openai", "openai")


def _import_openai() -> Any:
    try:
        return importlib.import_module("openai")
    except ImportError as error:
        raise OpenAIDependencyImportError() from error


class OpenAIProvider(BaseLLMProvider):
    """Streams completions from OpenAI (or a compatible server) with the `openai` SDK.

    With `api="chat"` it calls `AsyncOpenAI(...).chat.completions.create(model=...,
    messages=..., tools=..., stream=True, stream_options={"include_usage": True})`; with
    `api="responses"` it calls `client.responses.create(model=..., instructions=...,
    input=..., tools=..., stream=True, store=False)` (the full history is sent each time,
    so nothing needs storing on OpenAI's side).

    Config keys and defaults: `model` "gpt-4.1-mini"; `api_key` None (the SDK reads
    OPENAI_API_KEY); `base_url` None (api.openai.com; set it for compatible servers);
    `organization` None (OPENAI_ORG_ID); `timeout_seconds` 60 (first event, and the SDK's
    HTTP timeout); `stream_timeout_seconds` 30 (between events); `max_retries` 2 (the
    SDK's own retries); `api` "chat" or "responses"; `temperature` None; `max_tokens`
    None (sent as `max_completion_tokens` to OpenAI, `max_tokens` to compatible servers,
    `max_output_tokens` with the Responses API).
    """

    name = "openai"
    required_extra = "openai"
    config_model = OpenAIConfig
    default_config: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {
            "model": "gpt-4.1-mini",
            "api_key": None,
            "base_url": None,
            "organization": None,
            "timeout_seconds": 60,
            "stream_timeout_seconds": 30,
            "max_retries": 2,
            "api": "chat",
            "temperature": None,
            "max_tokens": None,
        }
    )

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        super().__init__(config, **options)
        self.check_values(self.settings)
        self._clients: ClientsByLoop[Any] = ClientsByLoop(self._make_client)
        self._call_numbers = itertools.count(1)

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        """Check the keys and values of `config` and that the `openai` SDK is installed.

        Raises:
            ConfigurationError: An unknown key or an invalid value.
            OpenAIDependencyImportError: The `openai` package is not installed.
        """
        cls.check_keys(config or {})
        _import_openai()
        cls.check_values(config or {})

    async def aclose(self) -> None:
        """Close this loop's SDK client and its connections (a new one is made on next use)."""
        await self._clients.aclose()

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        """Stream one completion: text chunks, tool calls, then one DoneEvent.

        Raises:
            OpenAIDependencyImportError: The `openai` package is not installed.
            ProviderError: The typed error for whatever the SDK or transport raised.
        """
        sdk = _import_openai()
        client = self._clients.get()
        reader: ChatStreamReader | ResponsesStreamReader
        if self.settings["api"] == "responses":
            reader = ResponsesStreamReader(self.name, self._new_call_id)
            create, request = (
                client.responses.create,
                responses_request(self.settings, messages, tools),
            )
        else:
            reader = ChatStreamReader(self.name, self._new_call_id)
            create, request = (
                client.chat.completions.create,
                chat_request(self.settings, messages, tools),
            )
        try:
            stream = await create(**request)
            try:
                async for item in stream:
                    for event in reader.read(item):
                        yield event
            finally:
                await stream.close()
            for event in reader.finish():
                yield event
            return
        except ProviderError:
            raise
        except Exception as error:
            mapped = _map_error(error, sdk, self.name)
            if mapped is None:
                raise
        # Raised outside the handler so that the SDK error is neither cause nor context:
        # its message may quote the API key or the conversation.
        raise mapped

    def _make_client(self) -> Any:
        sdk = _import_openai()
        timeout = float(self.settings["timeout_seconds"])
        stream_timeout = float(self.settings["stream_timeout_seconds"])
        try:
            return sdk.AsyncOpenAI(
                api_key=self.settings["api_key"],
                organization=self.settings["organization"],
                base_url=self.settings["base_url"],
                # A read may wait a whole between-events gap, not only the first byte.
                timeout=sdk.Timeout(timeout, read=max(timeout, stream_timeout)),
                max_retries=self.settings["max_retries"],
            )
        except sdk.OpenAIError:
            raise ProviderAuthError(
                f"{self.name} has no API key: set api_key or OPENAI_API_KEY",
                provider=self.name,
            ) from None

    def _new_call_id(self) -> str:
        return f"call_chatomon_{next(self._call_numbers)}"


def _map_error(error: Exception, sdk: Any, provider: str) -> ProviderError | None:
    """The typed ProviderError for an SDK or transport exception; None for anything else."""
    if isinstance(error, sdk.APITimeoutError):
        return ProviderTimeoutError(f"{provider} request timed out", provider=provider)
    if isinstance(error, sdk.APIConnectionError):
        return ProviderUnavailableError(f"{provider} connection failed", provider=provider)
    if isinstance(error, sdk.APIStatusError):
        return _status_error(error, provider)
    if isinstance(error, sdk.APIError):
        # An error object inside a 200 stream: only its code says what went wrong.
        code = getattr(error, "code", None) or getattr(error, "type", None)
        return error_for_code(code, provider=provider, where="mid-stream")
    timeouts, transport = _transport_errors()
    # Older SDKs let the HTTP library's errors escape from a stream (an incomplete body).
    if isinstance(error, timeouts):
        return ProviderTimeoutError(f"{provider} stream timed out", provider=provider)
    if isinstance(error, transport):
        return ProviderUnavailableError(
            f"{provider} connection was lost mid-stream ({type(error).__name__})",
            provider=provider,
        )
    return None


def _status_error(error: Any, provider: str) -> ProviderError:
    status: int = error.status_code
    # The vendor's code or type label, never its message (which may quote the input);
    # clipped because compatible servers may put anything there.
    label = str(error.code or error.type or "no error code")[:60]
    message = f"{provider} answered HTTP {status} ({label})"
    if status in (401, 403):
        return ProviderAuthError(message, provider=provider, status_code=status)
    if status == 429:
        retry_after = retry_after_seconds(error.response.headers)
        return ProviderRateLimitError(
            message, provider=provider, status_code=status, retry_after_seconds=retry_after
        )
    if error.code in CONTEXT_CODES or error.type in CONTEXT_CODES:
        return ProviderContextLengthError(message, provider=provider, status_code=status)
    if status == 408:
        return ProviderTimeoutError(message, provider=provider, status_code=status)
    if 400 <= status < 500:
        return ProviderBadRequestError(message, provider=provider, status_code=status)
    return ProviderUnavailableError(message, provider=provider, status_code=status)


def _transport_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    # Only the HTTP libraries the SDK already loaded: their errors cannot occur otherwise.
    modules = [sys.modules.get(name) for name in ("httpx2", "httpx")]
    loaded = [module for module in modules if module is not None]
    timeouts = tuple(module.TimeoutException for module in loaded)
    transport = tuple(module.TransportError for module in loaded)
    return timeouts, transport
