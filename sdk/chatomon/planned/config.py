"""Planned-chat settings: provider profiles, the five roles, and the planned section's limits.

`get_planned_chat_settings(chat)` reads a mapping shaped like settings.CHATOMON (the keys
provider, provider_config, provider_profiles, planned; others are ignored) into the frozen
`PlannedChatSettings`. Planned mode off, or no `provider_profiles`, gives the implicit
profile "default" (the legacy provider and provider_config, trust group "default") with
every role on it. A named profile never inherits the legacy provider_config.

The mapping is validated by `chatomon.planned.sections` (the models the Django settings
use too); every problem is one `ChatConfigurationError` naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pydantic import TypeAdapter, ValidationError

from chatomon._suggest import did_you_mean
from chatomon._validation import problem_of
from chatomon.errors import ChatConfigurationError, ConfigurationError
from chatomon.planned.sections import DEFAULT_PROFILE, REQUIRED_ROLES, ChatSection, read_only
from chatomon.providers.registry import build_provider, resolve_provider

__all__ = [
    "DEFAULT_PROFILE",
    "REQUIRED_ROLES",
    "PlannedChatSettings",
    "ProviderProfile",
    "build_profile_provider",
    "build_role_providers",
    "get_planned_chat_settings",
    "profile_for_role",
    "validate_profile_provider",
]

CHAT_SECTION = TypeAdapter(ChatSection)
"""Validates the planned keys of a CHATOMON-shaped mapping."""


@dataclass(frozen=True, slots=True)
class ProviderProfile:
    """One configured provider available to planned chat (provider_config is a read-only copy).

    `implicit` marks the profile built from the legacy provider and provider_config.
    """

    name: str
    provider: str
    provider_config: Mapping[str, Any] = field(repr=False)  # may hold credentials
    trust_group: str = DEFAULT_PROFILE
    implicit: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "provider_config", read_only(self.provider_config))


@dataclass(frozen=True, slots=True)
class PlannedChatSettings:
    """Immutable normalized settings used by planned chat.

    `roles` maps each of REQUIRED_ROLES to the name of one of `profiles`, which holds the
    profiles the roles use (all of one trust group). `catalog` is the configured source,
    loaded against a schema index by `chatomon.planned.catalog.load_manager_catalog`.
    """

    enabled: bool
    profiles: Mapping[str, ProviderProfile]
    roles: Mapping[str, str]
    catalog: Any = None
    max_concurrent_tasks: int = 3
    evidence_timeout_seconds: float = 90.0
    synthesis_timeout_seconds: float = 30.0
    max_rounds: int = 24
    max_rounds_per_root: int = 8
    request_timeout_seconds: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "profiles", read_only(self.profiles))
        object.__setattr__(self, "roles", read_only(self.roles))
        missing = [role for role in REQUIRED_ROLES if self.roles.get(role) not in self.profiles]
        if missing:
            raise ValueError(f"roles without a profile: {', '.join(missing)}")
        if len({self.profiles[name].trust_group for name in self.roles.values()}) != 1:
            raise ValueError("every role's profile must share one trust_group")

    @property
    def trust_group(self) -> str:
        """The one trust group every role's profile shares."""
        return self.profiles[self.roles[REQUIRED_ROLES[0]]].trust_group


def get_planned_chat_settings(chat: Mapping[str, Any] | None = None) -> PlannedChatSettings:
    """Return immutable planned-chat settings normalized from chat settings.

    With planned mode on, every role must name a profile, all of one trust group, and
    each named profile's provider must be a class with `from_config` (imported here, not
    built: its SDK is not needed yet).

    Args:
        chat: A mapping shaped like settings.CHATOMON; None reads as an empty one.

    Raises:
        ChatConfigurationError: invalid_planned_settings, naming the key and the problem.
        ImportError: A named provider's module fails to import (not a missing module).
    """
    if chat is None:
        chat = {}
    if not isinstance(chat, Mapping):
        raise ChatConfigurationError.invalid_planned_settings(
            f"the chat settings must be a mapping, got {type(chat).__name__}"
        )
    try:
        section = CHAT_SECTION.validate_python(dict(chat))
    except ValidationError as error:
        problem = problem_of(error, ChatSection)
        # Not chained: pydantic's own text would repeat provider_config's values.
        raise ChatConfigurationError.from_problem(
            problem, ChatConfigurationError.PLANNED_MESSAGE_PREFIX + problem.key, key="planned"
        ) from None
    planned = section.planned
    implicit = ProviderProfile(
        DEFAULT_PROFILE, section.provider, section.provider_config, DEFAULT_PROFILE, implicit=True
    )
    if planned.enabled and section.provider_profiles:
        roles = dict(planned.roles)
        profiles = {
            name: ProviderProfile(name, entry.provider, entry.provider_config, entry.trust_group)
            for name, entry in sorted(section.provider_profiles.items())
            if name in roles.values()
        }
        for profile in profiles.values():
            _constructible(profile)
    else:
        roles = dict.fromkeys(REQUIRED_ROLES, DEFAULT_PROFILE)
        profiles = {DEFAULT_PROFILE: implicit}
    return PlannedChatSettings(
        enabled=planned.enabled,
        profiles=profiles,
        roles=roles,
        catalog=planned.catalog,
        max_concurrent_tasks=planned.max_concurrent_tasks,
        evidence_timeout_seconds=planned.evidence_timeout_seconds,
        synthesis_timeout_seconds=planned.synthesis_timeout_seconds,
        max_rounds=planned.max_rounds,
        max_rounds_per_root=planned.max_rounds_per_root,
        request_timeout_seconds=planned.request_timeout_seconds,
    )


def _constructible(profile: ProviderProfile) -> None:
    """Refuse a named profile whose provider cannot be built from a configuration."""
    try:
        _require_from_config(profile)
    except ChatConfigurationError as error:
        raise ChatConfigurationError.invalid_planned_settings(str(error)) from None


def profile_for_role(settings: PlannedChatSettings, role: str) -> ProviderProfile:
    """Return the configured provider profile assigned to a planned-chat role.

    Raises:
        ValueError: `role` is not one of REQUIRED_ROLES.
    """
    if role not in REQUIRED_ROLES:
        raise ValueError(f"unknown planned role {role!r}{did_you_mean(role, REQUIRED_ROLES)}")
    return settings.profiles[settings.roles[role]]


def _profile_key(profile: ProviderProfile) -> str:
    return "provider" if profile.implicit else f"provider_profiles.{profile.name}.provider"


def _named(profile: ProviderProfile, error: ConfigurationError) -> ChatConfigurationError:
    """`error`, naming the profile's setting (a ChatConfigurationError passes unchanged)."""
    if isinstance(error, ChatConfigurationError):
        return error
    key = _profile_key(profile)
    message = f"{key} ({profile.provider!r}): {error}"
    return ChatConfigurationError(message, key=key, value=profile.provider, allowed=error.allowed)


def _provider_class(profile: ProviderProfile) -> tuple[type[Any], dict[str, Any]]:
    """The provider class a profile names and its whole configuration (short form's model first)."""
    try:
        cls, implied = resolve_provider(profile.provider)
    except ConfigurationError as error:
        raise _named(profile, error) from error
    return cls, {**implied, **profile.provider_config}


def _require_from_config(profile: ProviderProfile) -> tuple[Any, dict[str, Any]]:
    """A named profile's `from_config` and whole configuration (it builds through that)."""
    cls, config = _provider_class(profile)
    from_config = getattr(cls, "from_config", None)
    if from_config is None:
        key = _profile_key(profile)
        raise ChatConfigurationError(
            f"{key} names {cls.__name__}, which a profile cannot build: it has no "
            "from_config(config) classmethod",
            key=key,
            value=profile.provider,
        )
    return from_config, config


def build_profile_provider(profile: ProviderProfile) -> Any:
    """Build a provider from a profile without changing legacy settings.

    The implicit profile is built like the legacy provider (`build_provider`); a named
    profile needs a provider class with `from_config`.

    Raises:
        ChatConfigurationError: The provider is unknown, has no from_config or refuses
            the configuration (naming the profile's setting).
        ImportError: The provider's optional dependency is missing.
    """
    try:
        if profile.implicit:
            return build_provider(profile.provider, profile.provider_config)
        from_config, config = _require_from_config(profile)
        return from_config(config)
    except ConfigurationError as error:
        raise _named(profile, error) from error


def validate_profile_provider(profile: ProviderProfile) -> Any:
    """Build a profile provider and run its supported configuration check; return it.

    Raises:
        ChatConfigurationError: As build_profile_provider, or the check refuses the config.
        ImportError: The provider's optional dependency is missing.
    """
    cls, config = _provider_class(profile)
    check = getattr(cls, "check_configuration", None)
    if check is not None:  # first: it names a missing SDK before construction trips on it
        try:
            check(config)
        except ConfigurationError as error:
            raise _named(profile, error) from error
    return build_profile_provider(profile)


def build_role_providers(settings: PlannedChatSettings) -> Mapping[str, Any]:
    """Each role's provider: one instance per profile, shared by the roles that use it."""
    built = {name: build_profile_provider(settings.profiles[name]) for name in settings.profiles}
    return MappingProxyType({role: built[settings.roles[role]] for role in REQUIRED_ROLES})
