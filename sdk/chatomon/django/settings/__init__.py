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
`registry` and `workers` (how many server processes share the deployment: the system
checks warn when more than one uses the in-memory channel layer; None reads the
WEB_CONCURRENCY environment variable, which gunicorn and uvicorn honour, and defaults to 1).

`get_chat_settings()` merges the project's mapping over `DEFAULTS` (nested mappings key by
key); `validate_chat_settings()` checks every value and returns the frozen `ChatSettings`;
`chat_settings()` caches that until `setting_changed` reports a new CHATOMON.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed

from chatomon.chat.loop import LoopLimits
from chatomon.chat.service import AtomConfig
from chatomon.chat.tools.context import ToolSettings
from chatomon.data.registration import ManagerRegistry
from chatomon.django.settings.sections import (
    AuditLevel,
    AuditSettings,
    RateLimitSettings,
    audit_settings,
    planned_settings,
    provider_profiles,
    rate_limit_settings,
)
from chatomon.django.settings.values import (
    AtomSettings,
    checked_mapping,
    positive_number,
    reject_unknown_keys,
    resolve_atom,
    resolve_callable,
    text,
    truth,
    whole_number,
)
from chatomon.errors import ChatConfigurationError, ConfigurationError

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
        "allowed_mutations": [],
        "confirm_mutations": [],
        "confirm_timeout_seconds": 30,
        "max_results": 200,
        "query_timeout_seconds": None,
        "max_retries_per_message": 3,
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
            "tokens": None,
            "input_tokens": None,
            "output_tokens": None,
        },
        "audit": {
            "enabled": False,
            "level": "off",
            "logger": None,
            "max_result_size": 4096,
            "redact_fields": ["password", "secret", "token", "key", "credential"],
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

NESTED = ("rate_limit", "audit", "atom")
"""Keys whose mappings are merged key by key over their defaults."""

EXPECTED = {
    "max_results": "a whole number of at least 1",
    "query_timeout_seconds": "a number above 0, or None",
    "max_retries_per_message": "a whole number of at least 0",
    "max_mutations_per_message": "a whole number of at least 0",
    "allowed_mutations": "a list of mutation names",
    "confirm_mutations": "a list of names from allowed_mutations",
    "staff_approval_mutations": "a list of names from allowed_mutations, not in confirm_mutations",
}
"""What ToolSettings and LoopLimits accept, for the errors they leave without `allowed`."""


@dataclass(frozen=True)
class ChatSettings:
    """settings.CHATOMON, validated: one attribute per key, with the same names.

    Except the keys chatomon.chat validates itself, held as its objects: `tools` (a
    ToolSettings: max_results, query_timeout_seconds, allowed_mutations, confirm_mutations,
    staff_approval_mutations, tool_strategy) and `limits` (a LoopLimits: the
    max_*_per_message keys and recover_missing_tool_calls).
    """

    enabled: bool = False
    url: str = "/chat/"
    provider: str = "local"
    provider_config: Mapping[str, Any] = field(default_factory=dict)
    provider_profiles: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    planned: Mapping[str, Any] = field(default_factory=dict)
    permission: Callable[..., Any] | None = None
    allowed_origins: tuple[str, ...] | None = None
    tools: ToolSettings = field(default_factory=ToolSettings)
    limits: LoopLimits = field(default_factory=LoopLimits)
    confirm_timeout_seconds: float = 30
    system_prompt: str = ""
    max_recent_messages: int = 20
    summarize_after: int = 10
    ttl_hours: float = 24
    rate_limit: RateLimitSettings = field(default_factory=RateLimitSettings)
    audit: AuditSettings = field(default_factory=AuditSettings)
    atom: AtomSettings = field(default_factory=AtomSettings)
    staff_approval_timeout_seconds: float = 86400
    max_message_chars: int = 8000
    registry: Any = None
    workers: int | None = None

    @property
    def url_prefix(self) -> str:
        """The base path for Django routing: "chat/" (no leading slash; "" for the root)."""
        stripped = self.url.strip("/")
        return f"{stripped}/" if stripped else ""

    def atom_config(self) -> AtomConfig:
        """How ChatService builds each turn's Atom (the refusal goes into its options)."""
        options = dict(self.atom.options)
        if self.atom.refusal is not None:
            options["refusal"] = self.atom.refusal
        return AtomConfig(
            name=self.atom.name,
            input=self.atom.input,
            output=self.atom.output,
            capture_content=self.atom.capture_content,
            options=options,
        )

    def manager_registry(self) -> ManagerRegistry:
        """The registry the chat tools read: `registry`, or chatomon.data.registry for None.

        Raises:
            ChatConfigurationError: When a registry callable returns something else.
        """
        if self.registry is None:
            from chatomon.data.registration import registry  # noqa: PLC0415 - the default one

            return registry
        if isinstance(self.registry, ManagerRegistry):
            return self.registry
        built = self.registry()
        if not isinstance(built, ManagerRegistry):
            raise ChatConfigurationError.invalid_value(
                "registry", built, "a ManagerRegistry (the registry callable returned this)"
            )
        return built

    def chat_registry(self) -> ManagerRegistry:
        """The registry the chat tools read, filled and checked (the service and checks use it).

        For the default registry the installed apps' `chat` modules are imported first
        (`chatomon.data.autodiscover`); then `check_mutation_names` runs against it.

        Raises:
            ChatConfigurationError: As `manager_registry` and `check_mutation_names` do.
        """
        if self.registry is None:
            from chatomon.data.autodiscovery import autodiscover  # noqa: PLC0415 - needs apps

            autodiscover()
        registry = self.manager_registry()
        self.check_mutation_names(registry)
        return registry

    def check_mutation_names(self, registry: ManagerRegistry | None = None) -> None:
        """Check that allowed_mutations names registered mutations only.

        The check needs the filled registry, so it runs in `chat_registry`, not in
        `validate_chat_settings`.

        Raises:
            ChatConfigurationError: unknown_allowed_mutations, with a "did you mean".
        """
        known = (registry or self.manager_registry()).mutations
        unknown = [name for name in self.tools.allowed_mutations if name not in known]
        if unknown:
            raise ChatConfigurationError.unknown_allowed_mutations(unknown, known)

    def worker_count(self) -> int:
        """How many server processes serve chat: `workers`, else WEB_CONCURRENCY, else 1."""
        if self.workers is not None:
            return self.workers
        declared = os.environ.get("WEB_CONCURRENCY", "").strip()
        return int(declared) if declared.isdigit() and int(declared) > 0 else 1


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


def build_chat_settings(raw: Mapping[str, Any]) -> ChatSettings:
    """Validate a merged CHATOMON mapping (as `get_chat_settings` returns) into ChatSettings.

    Raises:
        ChatConfigurationError: Naming the first wrong key, its value and what is allowed.
    """
    reject_unknown_keys(raw, DEFAULTS, prefix="")
    tools = _tool_settings(raw)
    limits = _loop_limits(raw)
    profiles = provider_profiles(raw["provider_profiles"])
    return ChatSettings(
        enabled=truth("enabled", raw["enabled"]),
        url=_url(raw["url"]),
        provider=text("provider", raw["provider"]),
        provider_config=MappingProxyType(
            dict(checked_mapping("provider_config", raw["provider_config"]))
        ),
        provider_profiles=profiles,
        planned=planned_settings(raw["planned"], profiles),
        permission=_permission(raw["permission"]),
        allowed_origins=_origins(raw["allowed_origins"]),
        tools=tools,
        limits=limits,
        confirm_timeout_seconds=positive_number(
            "confirm_timeout_seconds", raw["confirm_timeout_seconds"]
        ),
        system_prompt=text("system_prompt", raw["system_prompt"], allow_empty=True),
        max_recent_messages=whole_number(
            "max_recent_messages", raw["max_recent_messages"], minimum=1
        ),
        summarize_after=whole_number("summarize_after", raw["summarize_after"], minimum=0),
        ttl_hours=positive_number("ttl_hours", raw["ttl_hours"]),
        rate_limit=rate_limit_settings(raw["rate_limit"], DEFAULTS["rate_limit"]),
        audit=audit_settings(raw["audit"], DEFAULTS["audit"]),
        atom=resolve_atom(raw["atom"], DEFAULTS["atom"]),
        staff_approval_timeout_seconds=positive_number(
            "staff_approval_timeout_seconds", raw["staff_approval_timeout_seconds"]
        ),
        max_message_chars=whole_number("max_message_chars", raw["max_message_chars"], minimum=1),
        registry=_registry(raw["registry"]),
        workers=None
        if raw["workers"] is None
        else whole_number("workers", raw["workers"], minimum=1),
    )


def _tool_settings(raw: Mapping[str, Any]) -> ToolSettings:
    try:
        return ToolSettings.from_mapping(raw)
    except ConfigurationError as error:
        raise _precise(error, raw) from error


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
    """The names in a mutation list as ToolSettings takes it: any iterable but a string.

    What is not a name is left to ToolSettings to report.
    """
    if isinstance(value, str) or not isinstance(value, Iterable):
        return []
    return [name for name in value if isinstance(name, str)]


def _precise(error: ConfigurationError, raw: Mapping[str, Any]) -> ChatConfigurationError:
    """The ChatConfigurationError for a ToolSettings/LoopLimits error (same key and value)."""
    stray = unallowed_confirmations(raw).get(error.field or "")
    if stray:
        allowed = raw.get("allowed_mutations") or ()
        return ChatConfigurationError.invalid_confirm_mutations(
            stray, allowed, key=error.field or ""
        )
    expected = EXPECTED.get(error.field or "")
    return ChatConfigurationError(
        str(error),
        key=error.field,
        value=error.value,
        allowed=error.allowed or ((expected,) if expected else ()),
    )


def _loop_limits(raw: Mapping[str, Any]) -> LoopLimits:
    # LoopLimits leaves the flag unchecked: a truthy 1 or "yes" is refused here.
    recover = truth("recover_missing_tool_calls", raw["recover_missing_tool_calls"])
    try:
        return LoopLimits(
            max_retries_per_message=raw["max_retries_per_message"],
            max_mutations_per_message=raw["max_mutations_per_message"],
            max_total_rounds_per_message=raw["max_total_rounds_per_message"],
            recover_missing_tool_calls=recover,
        )
    except ConfigurationError as error:
        if error.field == "max_total_rounds_per_message":
            raise ChatConfigurationError.invalid_turn_limit(
                error.field, "a positive whole number or None", error.value
            ) from error
        raise _precise(error, raw) from error


def _url(value: Any) -> str:
    path = text("url", value, allow_empty=True)
    if any(char.isspace() for char in path) or "://" in path or any(c in path for c in "?#"):
        raise ChatConfigurationError.invalid_value(
            "url", value, 'a URL path such as "/chat/" (no scheme, query or spaces)'
        )
    stripped = path.strip("/")
    return f"/{stripped}/" if stripped else "/"


def _permission(value: Any) -> Callable[..., Any] | None:
    if value is None:
        return None
    try:
        permission: Callable[..., Any] = resolve_callable("permission", value)
    except ChatConfigurationError as error:
        raise ChatConfigurationError.invalid_permission(value, str(error)) from error
    return permission


def _origins(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ChatConfigurationError.invalid_value(
            "allowed_origins", value, "None or a list of origins"
        )
    return tuple(text(f"allowed_origins[{index}]", item) for index, item in enumerate(value))


def _registry(value: Any) -> Any:
    if value is None or isinstance(value, ManagerRegistry):
        return value
    if isinstance(value, str):
        value = resolve_callable("registry", value, callable_only=False)
    if isinstance(value, ManagerRegistry) or callable(value):
        return value
    raise ChatConfigurationError.invalid_value(
        "registry", value, "None, a ManagerRegistry, a callable returning one, or a dotted path"
    )
