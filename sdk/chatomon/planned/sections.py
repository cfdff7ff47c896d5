"""The configured planned-chat sections, validated: `provider_profiles` entries and `planned`.

pydantic dataclasses that refuse unknown keys; each field's `description` says what it
accepts, in the words of the error message (`chatomon._validation.problem_of`). The SDK
(`chatomon.planned.config`) and the Django settings (`chatomon.django.settings`) validate
with these same models, so the two cannot disagree on a key or a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, StrictBool, model_validator
from pydantic import dataclasses as pydantic_dataclasses

from chatomon._suggest import did_you_mean
from chatomon._validation import Seconds, Text, invalid, unknown_key

__all__ = [
    "DEFAULT_PROFILE",
    "LEGACY_PROVIDER",
    "REQUIRED_ROLES",
    "ChatSection",
    "PlannedSection",
    "ProfileSection",
    "read_only",
]

REQUIRED_ROLES = (
    "planner",
    "simple_executor",
    "complex_executor",
    "synthesizer",
    "fallback_executor",
)
"""The roles every planned turn assigns to a provider profile."""

DEFAULT_PROFILE = "default"
"""The name (and trust group) of the implicit profile built from the legacy provider."""

LEGACY_PROVIDER = "local"
"""The provider when the mapping names none (chatomon.django.settings.DEFAULTS agrees)."""

SECTION = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
"""Unknown keys refused; any Python value (a catalog may be a callable)."""


def read_only(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only copy of `value`."""
    return MappingProxyType(dict(value))


ReadOnlyMapping = Annotated[Mapping[str, Any], AfterValidator(read_only)]
Whole = Annotated[int, Field(strict=True, ge=1)]


def _known_roles(roles: Mapping[str, str]) -> Mapping[str, str]:
    for role in roles:
        if role not in REQUIRED_ROLES:
            raise unknown_key(role, REQUIRED_ROLES)
    return MappingProxyType(dict(roles))


@pydantic_dataclasses.dataclass(frozen=True, config=SECTION)
class ProfileSection:
    """One configured entry of `provider_profiles` (validated, not yet named)."""

    provider: Text = Field(description="a provider short name or dotted class path")
    provider_config: ReadOnlyMapping = Field(
        default_factory=dict, validate_default=True, description="a mapping with string keys"
    )
    trust_group: Text = Field(default="default", description="a non-empty string")


@pydantic_dataclasses.dataclass(frozen=True, config=SECTION)
class PlannedSection:
    """The configured `planned` mapping: opt-in, catalog source, roles and limits.

    `max_rounds` and `max_rounds_per_root` (beyond the reference) bound the provider
    requests of one turn and of one root's subtree; both are enforced.
    """

    enabled: StrictBool = Field(default=False, description="True or False")
    catalog: Any = Field(default=None, description="a mapping, a callable or a dotted path to one")
    roles: Annotated[Mapping[str, Text], AfterValidator(_known_roles)] = Field(
        default_factory=dict,
        validate_default=True,
        description="a mapping of role names to provider_profiles names",
    )
    max_concurrent_tasks: Whole = Field(default=3, description="a whole number of at least 1")
    evidence_timeout_seconds: Seconds = Field(default=90.0, description="a number above 0")
    synthesis_timeout_seconds: Seconds = Field(default=30.0, description="a number above 0")
    max_rounds: Whole = Field(default=24, description="a whole number of at least 1")
    max_rounds_per_root: Whole = Field(default=8, description="a whole number of at least 1")
    request_timeout_seconds: Seconds | None = Field(
        default=None, description="a number above 0, or None"
    )

    @model_validator(mode="after")
    def _check_round_limits(self) -> PlannedSection:
        if self.max_rounds_per_root > self.max_rounds:
            raise invalid(
                f"must not exceed max_rounds ({self.max_rounds}), got {self.max_rounds_per_root}",
                at=("max_rounds_per_root",),
                value=self.max_rounds_per_root,
                show_value=True,
            )
        return self

    def role_problem(self, profiles: Mapping[str, ProfileSection]) -> str | None:
        """What is wrong with the roles given these profiles (when enabled), or None."""
        if not self.enabled:
            return None
        if not profiles:  # every role gets the implicit profile; roles may only name it
            stray = sorted({name for name in self.roles.values() if name != DEFAULT_PROFILE})
            if stray:
                return (
                    f"roles name unknown provider_profiles: {', '.join(stray)} (without "
                    f"provider_profiles every role uses the implicit {DEFAULT_PROFILE!r} profile)"
                )
            return None
        missing = [role for role in REQUIRED_ROLES if role not in self.roles]
        if missing:
            return f"roles must assign every role; missing: {', '.join(missing)}"
        unknown = sorted({name for name in self.roles.values() if name not in profiles})
        if unknown:
            hint = did_you_mean(unknown[0], profiles)
            return f"roles name unknown provider_profiles: {', '.join(unknown)}{hint}"
        groups = sorted({profiles[name].trust_group for name in self.roles.values()})
        if len(groups) > 1:
            return f"every role's profile must share one trust_group, got {', '.join(groups)}"
        return None


@pydantic_dataclasses.dataclass(frozen=True, config=ConfigDict(extra="ignore"))
class ChatSection:
    """The keys of a CHATOMON-shaped mapping that planned chat reads (the rest ignored)."""

    provider: Text = Field(default=LEGACY_PROVIDER, description="a provider name or class path")
    provider_config: ReadOnlyMapping = Field(
        default_factory=dict, validate_default=True, description="a mapping with string keys"
    )
    provider_profiles: Mapping[str, ProfileSection] = Field(
        default_factory=dict, description="a mapping of profile names to profiles"
    )
    planned: PlannedSection = Field(
        default_factory=PlannedSection, description="a mapping of planned settings"
    )

    @model_validator(mode="after")
    def _check_roles(self) -> ChatSection:
        problem = self.planned.role_problem(self.provider_profiles)
        if problem is not None:
            raise invalid(f"is invalid: {problem}", at=("planned", "roles"))
        return self
