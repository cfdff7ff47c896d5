"""The Anthropic adapter: Claude models through the official `anthropic` SDK.

The SDK is imported on first use (`pip install "chatomon[anthropic]"`); its types never
leave this module. Translating the history, the stream events and the error bodies lives
in `anthropic_format`.
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from types import MappingProxyType
from typing import Annotated, Any, ClassVar

from pydantic import Field

from chatomon.errors import (
    ProviderAuthError,
    ProviderDependencyError,
    ProviderError,
    ProviderProtocolError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from chatomon.providers.anthropic_format import NAME, StreamState, build_request, status_error
from chatomon.providers.base import (
    BaseLLMProvider,
    ChatEvent,
    ClientsByLoop,
    DoneEvent,
    Message,
    ToolDefinition,
)
from chatomon.providers.config import HostedConfig

__all__ = ["AnthropicConfig", "AnthropicDependencyImportError", "AnthropicProvider"]


class AnthropicConfig(HostedConfig):
    """What each key of an AnthropicProvider configuration accepts."""

    max_tokens: Annotated[int, Field(strict=True, ge=1)] = Field(
        description="a whole number of at least 1"
    )
    temperature: Annotated[float, Field(strict=True, ge=0, le=1)] | None = Field(
        description="a number from 0 to 1, or None"
    )


class AnthropicDependencyImportError(ProviderDependencyError):
    """The `anthropic` SDK is not installed; install it with `pip install "chatomon[anthropic]"`."""

    def __init__(self) -> None:
        super().__init__("anthropic", "anthropic")


def _import_sdk() -> Any:
    try:
        import anthropic  # noqa: PLC0415 - optional SDK, imported only when used
    except ImportError as error:
        raise AnthropicDependencyImportError() from error
    return anthropic


@functools.cache
def _transport_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """Timeout and request-error classes of the HTTP libraries the SDK may stream with.

    The SDK wraps transport errors raised while sending, but not those raised while the
    streamed body is read (a dropped connection, a read timeout): those surface raw.
    """
    timeouts: list[type[BaseException]] = []
    failures: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):  # anthropic 2.x streams with httpx2, older releases httpx
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        failures.append(module.RequestError)
    return tuple(timeouts), tuple(failures)


class AnthropicProvider(BaseLLMProvider):
    """Streams completions from Anthropic's Messages API.

    Calls `AsyncAnthropic(api_key=..., base_url=..., timeout=..., max_retries=...)` once per
    provider (and event loop), then `client.messages.create(..., stream=True)` per
    completion, translating the raw stream events: text deltas as they arrive, one
    ToolCallEvent per finished `tool_use` block, a DoneEvent with the usage after
    `message_stop`.

    Config keys (defaults): `model` ("claude-3-5-haiku-latest"), `api_key` (None: the SDK
    reads ANTHROPIC_API_KEY), `base_url` (None: the SDK default or ANTHROPIC_BASE_URL),
    `max_tokens` (1024), `timeout_seconds` (60; also the SDK's HTTP timeout),
    `stream_timeout_seconds` (30), `max_retries` (2, the SDK default), `temperature`
    (None: the model default; 0 to 1).

    Examples:
        >>> provider = AnthropicProvider(model="claude-3-5-haiku-latest", max_tokens=512)
        >>> provider
        <AnthropicProvider model='claude-3-5-haiku-latest'>
    """

    name: ClassVar[str] = NAME
    required_extra: ClassVar[str | None] = "anthropic"
    config_model = AnthropicConfig
    default_config: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {
            "model": "claude-3-5-haiku-latest",
            "api_key": None,
            "base_url": None,
            "max_tokens": 1024,
            "timeout_seconds": 60,
            "stream_timeout_seconds": 30,
            "max_retries": 2,
            "temperature": None,
        }
    )

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        super().__init__(config, **options)
        self._clients: ClientsByLoop[Any] = ClientsByLoop(self._make_client)

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        """Check the keys and values of `config` and that the `anthropic` SDK is installed.

        Raises:
            ConfigurationError: An unknown key or an invalid value.
            AnthropicDependencyImportError: The SDK is not installed.
        """
        cls.check_keys(config or {})
        _import_sdk()
        cls.check_values(config or {})

    def _make_client(self) -> Any:
        self.check_configuration(self.provider_config)
        settings = self.settings
        return _import_sdk().AsyncAnthropic(
            api_key=settings["api_key"],
            base_url=settings["base_url"],
            timeout=float(settings["timeout_seconds"]),
            max_retries=int(settings["max_retries"]),
        )

    async def aclose(self) -> None:
        """Close this loop's SDK client and its connections (a new one is made on next use)."""
        await self._clients.aclose()

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        """Stream one completion of `messages` with `tools` as chatomon events.

        Raises:
            AnthropicDependencyImportError: The SDK is not installed.
            ProviderError: A typed subclass for every vendor or transport failure.
        """
        sdk = _import_sdk()
        try:
            client = self._clients.get()
        except sdk.AnthropicError as error:
            # A named profile or an ANTHROPIC_CONFIG_DIR without a usable config fails here.
            raise (_translate(error, sdk) or error) from None
        if all(getattr(client, a, None) is None for a in ("api_key", "auth_token", "credentials")):
            raise ProviderAuthError(
                "anthropic has no credentials: set api_key or ANTHROPIC_API_KEY", provider=NAME
            )
        state = StreamState()
        try:
            stream = await client.messages.create(
                **build_request(self.settings, messages, tools), stream=True
            )
            async with stream:
                async for event in stream:
                    for item in state.feed(event):
                        yield item
                    if state.finished:
                        break
        except Exception as error:
            mapped = _translate(error, sdk)
            if mapped is None:
                raise  # chatomon's own errors (malformed tool arguments) pass unchanged
            raise mapped from None
        if not state.finished:
            raise ProviderUnavailableError(
                "anthropic stream ended before message_stop (incomplete response)", provider=NAME
            )
        yield DoneEvent(usage=state.usage())


def _translate(error: Exception, sdk: Any) -> ProviderError | None:
    """The ProviderError for an SDK or transport exception; None for any other exception."""
    timeouts, failures = _transport_errors()
    if isinstance(error, sdk.APIStatusError):
        body = getattr(error, "body", None)
        return status_error(int(error.status_code), body, error.response.headers)
    if isinstance(error, (sdk.APITimeoutError, *timeouts)):
        return ProviderTimeoutError("anthropic request timed out", provider=NAME)
    if isinstance(error, (sdk.APIConnectionError, *failures)):
        return ProviderUnavailableError(
            "anthropic connection failed or was lost mid-response", provider=NAME
        )
    if isinstance(error, json.JSONDecodeError):
        return ProviderProtocolError(
            "anthropic sent a stream event that is not valid JSON", provider=NAME
        )
    credentials_error = getattr(sdk, "CredentialsError", None)
    if credentials_error is not None and isinstance(error, credentials_error):
        return ProviderAuthError("anthropic could not load its credentials", provider=NAME)
    if isinstance(error, sdk.AnthropicError):
        return ProviderUnavailableError(
            f"anthropic SDK request failed ({type(error).__name__})", provider=NAME
        )
    return None
