"""The Gemini adapter: Google's Gemini models through the official `google-genai` SDK.

The SDK is imported on first use (`pip install "chatomon[google]"`); its types never leave
this module. The history, tool and error-body translation lives in `google_format`.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from types import MappingProxyType
from typing import Annotated, Any, ClassVar

import pydantic
from pydantic import Field

from chatomon.errors import (
    ConfigurationError,
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderDependencyError,
    ProviderError,
    ProviderProtocolError,
    ProviderTimeoutError,
    ProviderUnavailableError,
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
from chatomon.providers.config import HostedConfig
from chatomon.providers.google_format import (
    api_error,
    build_request,
    call_id_prefix,
    tool_call_id,
)

__all__ = ["GeminiConfig", "GeminiProvider", "GoogleDependencyImportError", "GoogleProvider"]


class GeminiConfig(HostedConfig):
    """What each key of a GeminiProvider configuration accepts."""

    temperature: Annotated[float, Field(strict=True, ge=0, le=2)] | None = Field(
        description="a number from 0 to 2, or None"
    )
    max_output_tokens: Annotated[int, Field(strict=True, ge=1)] | None = Field(
        description="a positive integer or None"
    )


NAME = "gemini"
_MAX_SIGNATURES = 4096
# Gemini 3 models refuse a function call in the history without its thought signature;
# for calls whose signature is unknown (a history from elsewhere) Google documents this
# placeholder. Gemini 1.x and 2.x models do not check signatures, so they get none.
_SKIP_SIGNATURE = b"skip_thought_signature_validator"
_NO_SIGNATURE_NEEDED = re.compile(r"(^|/)gemini-[12]\.")


class GoogleDependencyImportError(ProviderDependencyError):
    """The `google-genai` SDK is not installed; install it with `pip install "chatomon[google]"`."""

    def __init__(self) -> None:
        super().__init__("google.genai", "google")


def _import_sdk() -> tuple[Any, Any, Any]:
    """The SDK's `genai`, `genai.types` and `genai.errors` modules."""
    try:
        from google import genai  # noqa: PLC0415 - optional SDK, imported only when used
        from google.genai import errors, types  # noqa: PLC0415
    except ImportError as error:
        raise GoogleDependencyImportError() from error
    return genai, types, errors


class GeminiProvider(BaseLLMProvider):
    """Streams completions from the Gemini API (`streamGenerateContent?alt=sse`).

    Creates `google.genai.Client(api_key=..., http_options=HttpOptions(base_url=...,
    timeout=<ms>, retry_options=HttpRetryOptions(attempts=max_retries + 1)))` once per
    provider, then calls `client.aio.models.generate_content_stream(model=..., contents=...,
    config=GenerateContentConfig(system_instruction=..., tools=[Tool(function_declarations=
    [...])], automatic_function_calling disabled, ...))` per completion. Text parts stream
    as they arrive; function calls arrive whole (ids generated when Gemini sends none);
    the usage is the last `usageMetadata` of the stream. The thought signatures Gemini
    puts on function calls are kept per provider and sent back with those calls.

    Config keys (defaults): `model` ("gemini-2.5-flash"), `api_key` (None: the SDK reads
    GOOGLE_API_KEY / GEMINI_API_KEY), `base_url` (None: the SDK default), `timeout_seconds`
    (60; also the SDK's HTTP timeout, which google-genai applies to the whole request),
    `stream_timeout_seconds` (30), `temperature` (None: the model default; 0 to 2),
    `max_output_tokens` (None: the model default), `max_retries` (0: like the SDK, which
    retries only when asked).

    Examples:
        >>> GeminiProvider(model="gemini-2.5-pro", temperature=0.2)
        <GeminiProvider model='gemini-2.5-pro'>
    """

    name: ClassVar[str] = NAME
    required_extra: ClassVar[str | None] = "google"
    config_model = GeminiConfig
    default_config: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {
            "model": "gemini-2.5-flash",
            "api_key": None,
            "base_url": None,
            "timeout_seconds": 60,
            "stream_timeout_seconds": 30,
            "temperature": None,
            "max_output_tokens": None,
            "max_retries": 0,
        }
    )

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        super().__init__(config, **options)
        self.check_values(self.settings)
        self._clients: ClientsByLoop[Any] = ClientsByLoop(self._make_client)
        # Thought signatures of the calls this provider streamed, to send them back.
        self._signatures: OrderedDict[str, bytes] = OrderedDict()

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        """Check the keys and values of `config` and that the `google-genai` SDK is installed.

        Raises:
            ConfigurationError: An unknown key or an invalid value.
            GoogleDependencyImportError: The SDK is not installed.
        """
        cls.check_keys(config or {})
        _import_sdk()
        cls.check_values(config or {})

    async def aclose(self) -> None:
        """Close this loop's SDK async client and its connections (made anew on next use)."""
        await self._clients.aclose()

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        """Stream one completion of `messages`, offering `tools`.

        Raises:
            GoogleDependencyImportError: The SDK is not installed.
            ProviderError: A typed error for every SDK or transport failure.
        """
        _, types, _ = _import_sdk()
        model = self.settings["model"]
        request = build_request(
            messages,
            tools,
            signatures=self._signatures,
            fallback_signature=None if _NO_SIGNATURE_NEEDED.search(model) else _SKIP_SIGNATURE,
        )
        config = types.GenerateContentConfig(
            system_instruction=request.system_instruction,
            tools=[types.Tool(function_declarations=request.function_declarations)]
            if request.function_declarations
            else None,
            # chatomon runs the tools itself and sends one request per completion.
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            automatic_continuation=False,
            temperature=self.settings["temperature"],
            max_output_tokens=self.settings["max_output_tokens"],
        )
        contents = [types.Content.model_validate(content) for content in request.contents]
        prefix, usage, calls = call_id_prefix(messages), TokenUsage(), 0
        signature: bytes | None = None  # Gemini 2.5 signs the first part, maybe text
        stream: Any = None
        try:
            stream = await self._clients.get().models.generate_content_stream(
                model=model, contents=contents, config=config
            )
            async for chunk in stream:
                _check_prompt_feedback(chunk)
                if chunk.usage_metadata is not None:
                    usage = _usage(chunk.usage_metadata)
                content = chunk.candidates[0].content if chunk.candidates else None
                for part in (content.parts if content is not None else None) or ():
                    signature = part.thought_signature or signature
                    call = part.function_call
                    if call is not None:
                        if not call.name:
                            raise ProviderProtocolError(
                                f"{NAME} sent a function call without a name", provider=NAME
                            )
                        call_id = tool_call_id(call.id, prefix, calls)
                        arguments = decode_arguments(call.args, provider=NAME, tool=call.name)
                        if signature:
                            self._remember(call_id, signature)
                            signature = None
                        yield ToolCallEvent(id=call_id, name=call.name, args=arguments)
                        calls += 1
                    elif part.text and not part.thought:  # thought summaries are not the reply
                        yield TextChunkEvent(content=part.text)
        except ProviderError:
            raise
        except Exception as error:
            mapped = _provider_error(error)
            if mapped is None:
                raise
            raise mapped from None
        finally:
            if stream is not None:
                with contextlib.suppress(Exception):
                    await stream.aclose()
        yield DoneEvent(usage=usage)

    def _remember(self, call_id: str, signature: bytes) -> None:
        self._signatures[call_id] = signature
        while len(self._signatures) > _MAX_SIGNATURES:
            self._signatures.popitem(last=False)

    def _make_client(self) -> Any:
        """The SDK's async client (`genai.Client(...).aio`)."""
        genai, types, _ = _import_sdk()
        settings = self.settings
        options = types.HttpOptions(
            base_url=settings["base_url"],
            # HttpOptions.timeout is in milliseconds.
            timeout=max(1, round(float(settings["timeout_seconds"]) * 1000)),
            # attempts=1 also turns off the SDK's implicit aiohttp reconnect.
            retry_options=types.HttpRetryOptions(attempts=int(settings["max_retries"]) + 1),
        )
        try:
            return genai.Client(api_key=settings["api_key"], http_options=options).aio
        except ValueError as error:
            if "api key" in str(error).lower():
                raise ProviderAuthError(
                    f"{NAME} has no API key: set api_key, GOOGLE_API_KEY or GEMINI_API_KEY",
                    provider=NAME,
                ) from None
            # Other refusals come from GOOGLE_GENAI_* environment variables.
            raise ConfigurationError(
                "google-genai refused to create its client; check the GOOGLE_GENAI_* "
                "environment variables",
                field="base_url",
            ) from error


GoogleProvider = GeminiProvider
"""Alias of `GeminiProvider` (the registry's "google" short name)."""


def _usage(metadata: Any) -> TokenUsage:
    # Thinking tokens are billed as output, so they count with the candidates.
    output = (metadata.candidates_token_count or 0) + (metadata.thoughts_token_count or 0)
    return TokenUsage(input_tokens=metadata.prompt_token_count or 0, output_tokens=output)


def _check_prompt_feedback(chunk: Any) -> None:
    feedback = chunk.prompt_feedback
    reason = feedback.block_reason if feedback is not None else None
    if reason is not None:
        label = getattr(reason, "value", reason)
        raise ProviderBadRequestError(f"{NAME} blocked the prompt ({label})", provider=NAME)


def _provider_error(error: Exception) -> ProviderError | None:
    """The typed error for an SDK or transport exception; None for anything else."""
    _, _, errors = _import_sdk()
    if isinstance(error, errors.APIError):
        response = getattr(error, "response", None)
        headers = getattr(response, "headers", None)
        return api_error(
            NAME,
            error.code if isinstance(error.code, int) else None,
            status=error.status,
            message=error.message,
            body=error.details,
            headers=dict(headers.items()) if headers is not None else None,
        )
    if isinstance(error, errors.UnknownApiResponseError):
        # Its message quotes the raw event, which may hold conversation text.
        return ProviderProtocolError(f"{NAME} sent a stream event that is not JSON", provider=NAME)
    if isinstance(error, pydantic.ValidationError):
        return ProviderProtocolError(
            f"{NAME} sent a stream event that does not match GenerateContentResponse "
            "(e.g. function call args that are not an object)",
            provider=NAME,
        )
    # The SDK streams with httpx2 (or httpx, or aiohttp when installed) and lets their
    # errors through; only modules already imported can have raised.
    for module_name in ("httpx2", "httpx"):
        module = sys.modules.get(module_name)
        if module is None:
            continue
        if isinstance(error, module.TimeoutException):
            return ProviderTimeoutError(f"{NAME} timed out ({type(error).__name__})", provider=NAME)
        if isinstance(error, module.HTTPError | module.StreamError):
            return _unavailable(error)
    aiohttp = sys.modules.get("aiohttp")
    if isinstance(error, TimeoutError):
        return ProviderTimeoutError(f"{NAME} timed out ({type(error).__name__})", provider=NAME)
    if aiohttp is not None and isinstance(error, aiohttp.ClientError):
        return _unavailable(error)
    return None


def _unavailable(error: Exception) -> ProviderUnavailableError:
    return ProviderUnavailableError(
        f"{NAME} connection failed ({type(error).__name__})", provider=NAME
    )
