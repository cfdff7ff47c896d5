"""settings.CHATOMON: the defaults, their validation and the cached `ChatSettings`.

```python
CHATOMON = {
    "enabled": True,
    "provider": "openai:gpt-4.1-mini",
    "allowed_mutations": ["createPart"],
    "confirm_mutations": ["createPart"],
    "atom": {"input": ["chatomon.orbitals.PIIGuard"]},
}
```

Every key of the seed's settings tables is here with the seed's default, except one:
`provider` defaults to `"local"` (the embedded offline LocalProvider) rather than the seed's
Ollama, so a fresh project answers without a model server. chatomon adds `atom`,
`staff_approval_mutations`, `staff_approval_timeout_seconds`, `max_message_chars`,
`max_retries_counts` (what `max_retries_per_message` counts: the reference's "tool_rounds"
by default, or "failed_tool_rounds"), two request budgets in `rate_limit`
(`console_requests`, the staff console's chat per staff user, and
`anonymous_requests_per_ip`, anonymous askers per client address: see
`RateLimitSettings`), `embed` (the sites that embed the widget with visitor tokens:
`chatomon.django.settings.embed`), `registry` and `workers` (how many server processes
share the deployment: the system checks warn when more than one uses the in-memory channel
layer; None reads the WEB_CONCURRENCY environment variable, which gunicorn and uvicorn
honour, and defaults to 1).

`get_chat_settings()` merges the project's mapping over `DEFAULTS` (nested mappings key by
key); `validate_chat_settings()` validates it into the frozen `ChatSettings` (a pydantic
model per section: `model`, `sections`, `atom`); `chat_settings()` caches that until
`setting_changed` reports a new CHATOMON; `get_planned_chat_settings()` (module `planned`)
normalizes its planned keys into `chatomon.planned.config.PlannedChatSettings`, cached the
same way. Whatever is wrong is raised as one
`ChatConfigurationError` naming the key path, the value, what is allowed and, for a
misspelled key, the closest known one (`chatomon._validation.problem_of` reads pydantic's
errors, for the providers' configurations too).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from pydantic import TypeAdapter, ValidationError

from chatomon._validation import problem_of
from chatomon.django.settings.atom import AtomSettings
from chatomon.django.settings.model import ChatSettings
from chatomon.django.settings.planned import get_planned_chat_settings
from chatomon.django.settings.sections import AuditLevel, AuditSettings, RateLimitSettings
from chatomon.errors import ChatConfigurationError, setting_label
from chatomon.redaction import SENSITIVE_KEYS

__all__ = [
    "DEFAULTS",
    "AtomSettings",
    "AuditLevel",
    "AuditSettings",
    "ChatSettings",
    "RateLimitSettings",
    "build_chat_settings",
    "chat_settings",
    "get_chat_settings",
    "get_planned_chat_settings",
    "unallowed_confirmations",
    "validate_chat_settings",
]

DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "enabled": False,
        "url": "/chat/",
        "provider": "local",
        "provider_config": {},
        "provider_profiles": {},
        "planned": {},
        "permission": None,
        "allowed_origins": None,
        "embed": {},
        "allowed_mutations": [],
        "confirm_mutations": [],
        "confirm_timeout_seconds": 30,
        "max_results": 200,
        "query_timeout_seconds": None,
        "max_retries_per_message": 3,
        "max_retries_counts": "tool_rounds",
        "max_mutations_per_message": 8,
        "max_total_rounds_per_message": None,
        "tool_strategy": "discovery",
        "recover_missing_tool_calls": False,
        "system_prompt": "",
        "max_recent_messages": 20,
        "summarize_after": 10,
        "ttl_hours": 24,
        "rate_limit": {
            "requests": 60,
            "window_seconds": 3600,
            "console_requests": 600,
            "anonymous_requests_per_ip": None,
            "tokens": None,
            "input_tokens": None,
            "output_tokens": None,
        },
        "audit": {
            "enabled": False,
            "level": "off",
            "logger": None,
            "max_result_size": 4096,
            "redact_fields": list(SENSITIVE_KEYS),
        },
        "atom": {
            "name": "chat",
            "input": [],
            "output": [],
            "refusal": None,
            "capture_content": "none",
            "options": {},
        },
        "staff_approval_mutations": [],
        "staff_approval_timeout_seconds": 86400,
        "max_message_chars": 8000,
        "registry": None,
        "workers": None,
    }
)
"""Every CHATOMON key with its default (read-only; `get_chat_settings` copies it)."""

SETTINGS = TypeAdapter(ChatSettings)
"""Validates a merged CHATOMON mapping into ChatSettings."""

NESTED = ("rate_limit", "audit", "atom")
"""Keys whose mappings are merged key by key over their defaults."""


def get_chat_settings() -> dict[str, Any]:
    """settings.CHATOMON merged over `DEFAULTS` (nested mappings key by key), unvalidated.

    Raises:
        ChatConfigurationError: invalid_settings_mapping, when CHATOMON is not a mapping.
    """
    configured = getattr(django_settings, "CHATOMON", None)
    if configured is None:
        configured = {}
    if not isinstance(configured, Mapping):
        raise ChatConfigurationError.invalid_settings_mapping(configured)
    merged = copy.deepcopy(dict(DEFAULTS))
    for key, value in configured.items():
        if key in NESTED and isinstance(value, Mapping):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def build_chat_settings(raw: Mapping[str, Any]) -> ChatSettings:
    """Validate a merged CHATOMON mapping (as `get_chat_settings` returns) into ChatSettings.

    Raises:
        ChatConfigurationError: Naming the first wrong key, its value and what is allowed.
    """
    try:
        return SETTINGS.validate_python(raw)
    except ValidationError as error:
        problem = problem_of(error, ChatSettings)
        # Not chained: pydantic's own text would repeat provider_config's credentials.
        raise ChatConfigurationError.from_problem(problem, setting_label(problem.key)) from None


def validate_chat_settings() -> ChatSettings:
    """settings.CHATOMON, validated and normalized.

    Raises:
        ChatConfigurationError: Naming the first wrong key, its value and what is allowed.
    """
    return build_chat_settings(get_chat_settings())


@lru_cache(maxsize=1)
def chat_settings() -> ChatSettings:
    """The validated settings, cached until settings.CHATOMON changes."""
    return validate_chat_settings()


def _forget_cached_settings(*, setting: str, **_: Any) -> None:
    if setting == "CHATOMON":
        chat_settings.cache_clear()


setting_changed.connect(_forget_cached_settings, dispatch_uid="chatomon.django.settings")


def unallowed_confirmations(raw: Mapping[str, Any]) -> dict[str, list[str]]:
    """Names in confirm_mutations / staff_approval_mutations missing from allowed_mutations.

    Keyed by setting; only settings with such names appear. Works on the raw merged
    mapping, so the system checks can report it beside other problems.
    """
    permitted = set(_names(raw.get("allowed_mutations")))
    stray: dict[str, list[str]] = {}
    for key in ("confirm_mutations", "staff_approval_mutations"):
        missing = [name for name in _names(raw.get(key)) if name not in permitted]
        if missing:
            stray[key] = missing
    return stray


def _names(value: Any) -> list[str]:
    """The names in a mutation list as validation reads it: any collection but a string.

    What is not a name is left to validation to report.
    """
    if isinstance(value, str) or not isinstance(value, Iterable):
        return []
    return [name for name in value if isinstance(name, str)]
