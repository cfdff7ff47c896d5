"""The nested sections of settings.CHATOMON: rate_limit, audit, provider_profiles, planned.

chatomon.django.settings merges each over its defaults and calls these to check it; the
dataclasses are re-exported there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, get_args

from chatomon.django.settings.values import (
    checked_mapping,
    positive_number,
    reject_unknown_keys,
    resolve_callable,
    text,
    truth,
    whole_number,
)
from chatomon.errors import ChatConfigurationError

__all__ = [
    "AUDIT_LEVELS",
    "AuditLevel",
    "AuditSettings",
    "RateLimitSettings",
    "audit_settings",
    "planned_settings",
    "provider_profiles",
    "rate_limit_settings",
]

AuditLevel = Literal["off", "messages", "all"]
"""off: nothing; messages: user and assistant messages; all: also tool activity."""

AUDIT_LEVELS: tuple[AuditLevel, ...] = get_args(AuditLevel)

PLANNED_KEYS = (
    "enabled",
    "catalog",
    "roles",
    "max_concurrent_tasks",
    "evidence_timeout_seconds",
    "synthesis_timeout_seconds",
)
PLANNED_ROLES = (
    "planner",
    "simple_executor",
    "complex_executor",
    "synthesizer",
    "fallback_executor",
)
PROFILE_KEYS = ("provider", "provider_config", "trust_group")


@dataclass(frozen=True)
class RateLimitSettings:
    """The request and token budgets per scope (user, else session, else client IP).

    A limit that is None, zero or negative in the settings creates no budget: it is None
    here.
    """

    requests: int | None = 60
    window_seconds: float = 3600
    tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None

    def token_limits(self) -> dict[str, int]:
        """The token budgets in force, by counter name (tokens, input_tokens, output_tokens)."""
        limits = {
            "tokens": self.tokens,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
        return {name: limit for name, limit in limits.items() if limit is not None}


@dataclass(frozen=True)
class AuditSettings:
    """What the audit trail records and where it goes.

    Attributes:
        enabled: Whether anything is recorded.
        level: "off", "messages" or "all".
        logger: Called with each sanitized event mapping (resolved from a dotted path).
        max_result_size: Longest serialized tool result kept, in characters.
        redact_fields: Key segments whose values are replaced by "[redacted]".
    """

    enabled: bool = False
    level: AuditLevel = "off"
    logger: Callable[[Mapping[str, Any]], Any] | None = None
    max_result_size: int = 4096
    redact_fields: tuple[str, ...] = ("password", "secret", "token", "key", "credential")

    @property
    def active(self) -> bool:
        """Whether events are recorded at all (enabled and a level other than "off")."""
        return self.enabled and self.level != "off"


def _limit(key: str, value: Any) -> int | None:
    if value is None:
        return None
    number = whole_number(key, value, minimum=None)
    return number if number > 0 else None


def rate_limit_settings(value: Any, defaults: Mapping[str, Any]) -> RateLimitSettings:
    """The `rate_limit` setting (merged over `defaults`), checked."""
    mapping = checked_mapping("rate_limit", value)
    reject_unknown_keys(mapping, defaults, prefix="rate_limit.")
    return RateLimitSettings(
        requests=_limit("rate_limit.requests", mapping["requests"]),
        window_seconds=positive_number("rate_limit.window_seconds", mapping["window_seconds"]),
        tokens=_limit("rate_limit.tokens", mapping["tokens"]),
        input_tokens=_limit("rate_limit.input_tokens", mapping["input_tokens"]),
        output_tokens=_limit("rate_limit.output_tokens", mapping["output_tokens"]),
    )


def audit_settings(value: Any, defaults: Mapping[str, Any]) -> AuditSettings:
    """The `audit` setting (merged over `defaults`), checked, its logger resolved."""
    mapping = checked_mapping("audit", value)
    reject_unknown_keys(mapping, defaults, prefix="audit.")
    level = mapping["level"]
    if level not in AUDIT_LEVELS:
        raise ChatConfigurationError.invalid_choice("audit.level", level, AUDIT_LEVELS)
    fields_ = mapping["redact_fields"]
    if isinstance(fields_, str) or not isinstance(fields_, list | tuple):
        raise ChatConfigurationError.invalid_value(
            "audit.redact_fields", fields_, "a list of key terms"
        )
    logger = mapping["logger"]
    return AuditSettings(
        enabled=truth("audit.enabled", mapping["enabled"]),
        level=level,
        logger=None if logger is None else resolve_callable("audit.logger", logger),
        max_result_size=whole_number(
            "audit.max_result_size", mapping["max_result_size"], minimum=1
        ),
        redact_fields=tuple(
            text(f"audit.redact_fields[{index}]", term).lower()
            for index, term in enumerate(fields_)
        ),
    )


def provider_profiles(value: Any) -> Mapping[str, Mapping[str, Any]]:
    """The `provider_profiles` setting, checked: provider, provider_config, trust_group each."""
    profiles = checked_mapping("provider_profiles", value)
    normalized: dict[str, Mapping[str, Any]] = {}
    for name, profile in profiles.items():
        key = f"provider_profiles.{name}"
        entry = checked_mapping(key, profile)
        reject_unknown_keys(entry, PROFILE_KEYS, prefix=f"{key}.")
        normalized[name] = MappingProxyType(
            {
                "provider": text(f"{key}.provider", entry.get("provider")),
                "provider_config": MappingProxyType(
                    dict(
                        checked_mapping(f"{key}.provider_config", entry.get("provider_config", {}))
                    )
                ),
                "trust_group": text(f"{key}.trust_group", entry.get("trust_group", "default")),
            }
        )
    return MappingProxyType(normalized)


def planned_settings(value: Any, profiles: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]:
    """The `planned` setting, checked: known keys, and when enabled, every role assigned."""
    if not isinstance(value, Mapping):
        raise ChatConfigurationError.invalid_planned_settings(
            f"planned must be a mapping, got {type(value).__name__}"
        )
    unknown = [key for key in value if key not in PLANNED_KEYS]
    if unknown:
        raise ChatConfigurationError.unknown_key(f"planned.{unknown[0]}", PLANNED_KEYS)
    enabled = truth("planned.enabled", value.get("enabled", False))
    roles = value.get("roles", {})
    if not isinstance(roles, Mapping):
        raise ChatConfigurationError.invalid_planned_settings("roles must be a mapping")
    if enabled and profiles:
        missing = [role for role in PLANNED_ROLES if role not in roles]
        if missing:
            raise ChatConfigurationError.invalid_planned_settings(
                f"roles must assign every role; missing: {', '.join(missing)}"
            )
        unknown_profiles = sorted({str(name) for name in roles.values() if name not in profiles})
        if unknown_profiles:
            raise ChatConfigurationError.invalid_planned_settings(
                f"roles name unknown provider_profiles: {', '.join(unknown_profiles)}"
            )
        groups = {profiles[name]["trust_group"] for name in roles.values()}
        if len(groups) > 1:
            raise ChatConfigurationError.invalid_planned_settings(
                f"every role's profile must share one trust_group, got {', '.join(sorted(groups))}"
            )
    return MappingProxyType({**value, "enabled": enabled})
