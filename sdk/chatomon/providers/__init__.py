"""Providers: the adapters between chatomon and LLM vendors.

`base` holds the protocol; `contract.run_completion` enforces it for every caller;
`testing` ships deterministic providers; `registry` resolves names from settings; each
vendor has its own module (`openai`, `anthropic`, `ollama`, `google`, `local`), which
imports the vendor SDK only when a provider is used.
"""

from __future__ import annotations

import importlib
from typing import Any

from chatomon.providers.base import (
    BaseLLMProvider,
    ChatEvent,
    DoneEvent,
    Message,
    TextChunkEvent,
    TokenUsage,
    ToolCall,
    ToolCallEvent,
    ToolDefinition,
)
from chatomon.providers.contract import run_completion
from chatomon.providers.nucleus import ProviderNucleus
from chatomon.providers.registry import build_provider, resolve_provider
from chatomon.providers.testing import FunctionProvider, ScriptedProvider

__all__ = [
    "AnthropicProvider",
    "BaseLLMProvider",
    "ChatEvent",
    "DoneEvent",
    "FunctionProvider",
    "GeminiProvider",
    "GoogleProvider",
    "LocalProvider",
    "Message",
    "OllamaProvider",
    "OpenAIProvider",
    "ProviderNucleus",
    "ScriptedProvider",
    "TextChunkEvent",
    "TokenUsage",
    "ToolCall",
    "ToolCallEvent",
    "ToolDefinition",
    "build_provider",
    "resolve_provider",
    "run_completion",
]

_ADAPTERS = {
    "OpenAIProvider": "chatomon.providers.openai",
    "AnthropicProvider": "chatomon.providers.anthropic",
    "OllamaProvider": "chatomon.providers.ollama",
    "GeminiProvider": "chatomon.providers.google",
    "GoogleProvider": "chatomon.providers.google",
    "LocalProvider": "chatomon.providers.local",
}


def __getattr__(name: str) -> Any:
    # Adapter modules load on first use so that `import chatomon.providers` stays light.
    if name in _ADAPTERS:
        return getattr(importlib.import_module(_ADAPTERS[name]), name)
    raise AttributeError(f"module 'chatomon.providers' has no attribute {name!r}")
