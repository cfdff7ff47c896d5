"""Resolving provider names from settings: dotted class paths and short forms.

- a dotted path, `"chatomon.providers.openai.OpenAIProvider"` (any importable class);
- a short form, `"openai:gpt-4.1-mini"`, `"anthropic:claude-3-5-haiku-latest"`,
  `"ollama:gemma4:e4b"`, `"gemini:gemini-2.5-flash"` (also `google:`), or `"local"`; the
  part after the first colon is the model.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from chatomon._suggest import did_you_mean
from chatomon.errors import ConfigurationError

__all__ = ["PROVIDER_CLASSES", "build_provider", "resolve_provider"]

PROVIDER_CLASSES: Mapping[str, str] = {
    "openai": "chatomon.providers.openai.OpenAIProvider",
    "anthropic": "chatomon.providers.anthropic.AnthropicProvider",
    "ollama": "chatomon.providers.ollama.OllamaProvider",
    "gemini": "chatomon.providers.google.GeminiProvider",
    "google": "chatomon.providers.google.GeminiProvider",
    "local": "chatomon.providers.local.LocalProvider",
}
"""Short provider names and the classes they stand for."""


def resolve_provider(path: str) -> tuple[type[Any], dict[str, Any]]:
    """The provider class a settings string names, and the config its short form implies."""
    if not isinstance(path, str) or not path.strip():
        raise ConfigurationError(
            f"provider must be a dotted class path or a short name, got {path!r}",
            field="provider",
            value=path,
            allowed=sorted(PROVIDER_CLASSES),
        )
    short, _, model = path.partition(":")
    if short in PROVIDER_CLASSES:
        return _import(PROVIDER_CLASSES[short]), ({"model": model} if model else {})
    if "." not in path or ":" in path:
        hint = did_you_mean(short, PROVIDER_CLASSES)
        raise ConfigurationError(
            f"unknown provider {path!r}{hint} (short names: {', '.join(sorted(PROVIDER_CLASSES))}, "
            "or a dotted class path)",
            field="provider",
            value=path,
            allowed=sorted(PROVIDER_CLASSES),
        )
    return _import(path), {}


def build_provider(path: str, config: Mapping[str, Any] | None = None) -> Any:
    """Construct the provider `path` names with `config` (over the short form's model)."""
    cls, implied = resolve_provider(path)
    merged = {**implied, **(config or {})}
    from_config = getattr(cls, "from_config", None)
    if from_config is not None:
        return from_config(merged)
    if merged:
        raise ConfigurationError(
            f"{cls.__name__} takes no configuration (it has no from_config)",
            field="provider_config",
            value=sorted(merged),
        )
    return cls()


def _import(dotted: str) -> type[Any]:
    module_name, _, attribute = dotted.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        missing = error.name or ""
        if not (module_name == missing or module_name.startswith(missing + ".")):
            raise  # the module exists but one of its own imports failed: show that

        raise ConfigurationError(
            f"provider module {module_name!r} cannot be imported", field="provider", value=dotted
        ) from error
    try:
        return getattr(module, attribute)  # type: ignore[no-any-return]
    except AttributeError:
        raise ConfigurationError(
            f"provider module {module_name!r} has no {attribute!r}", field="provider", value=dotted
        ) from None
