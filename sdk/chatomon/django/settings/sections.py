"""The nested sections of settings.CHATOMON: rate_limit, audit, provider_profiles, planned.

Each is a frozen pydantic model that refuses unknown keys; a field's `description` says
what it accepts, in the words of the error message. `atom` and `embed` have modules of their own;
provider_profiles and planned are the SDK's (`chatomon.planned.sections`), so that the
Django settings and `chatomon.planned.config` read them alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Annotated, Any, Literal

from django.utils.module_loading import import_string
from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, StrictBool
from pydantic.dataclasses import dataclass

from chatomon._validation import Seconds, Text, invalid
from chatomon.planned.config import REQUIRED_ROLES
from chatomon.planned.sections import PlannedSection, ProfileSection
from chatomon.redaction import SENSITIVE_KEYS

__all__ = [
    "PLANNED_ROLES",
    "SECTION",
    "AuditLevel",
    "AuditSettings",
    "Callback",
    "FrozenMapping",
    "PlannedSettings",
    "ProviderProfile",
    "RateLimitSettings",
    "frozen",
    "resolve_dotted",
]

AuditLevel = Literal["off", "messages", "all"]
"""off: nothing; messages: user and assistant messages; all: also tool activity."""

CALLABLE_FORMS = ("a callable", "a dotted path to a callable")


SECTION = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
"""The configuration of every settings model: unknown keys refused, any Python value.

The models are frozen pydantic dataclasses: validated on construction (also by
`dataclasses.replace`), compared and copied as the dataclasses they replaced.
"""


def resolve_dotted(value: Any, *, callable_only: bool = True) -> Any:
    """`value`, or what its dotted path names; a callable unless `callable_only` is False.

    Raises:
        PydanticCustomError: The path cannot be imported, or names no callable.
    """
    target = value
    if isinstance(value, str):
        try:
            target = import_string(value)
        except ImportError as error:
            raise invalid(
                f"names {value!r}, which cannot be imported: {error}", allowed=CALLABLE_FORMS
            ) from error
    if callable_only and not callable(target):
        raise invalid(
            f"must be a callable or a dotted path to a callable, got {value!r}",
            allowed=CALLABLE_FORMS,
        )
    return target


Callback = Annotated[Callable[..., Any], BeforeValidator(resolve_dotted)]
"""A callable, given as itself or as the dotted path of one."""


def frozen(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only copy of `value` (frozen models hold no mutable mapping)."""
    return MappingProxyType(dict(value))


FrozenMapping = Annotated[Mapping[str, Any], AfterValidator(frozen)]
"""A mapping with string keys, held read-only."""


def _budget(limit: int | None) -> int | None:
    # The seed: None, zero and negative values create no budget for that counter.
    return limit if limit is not None and limit > 0 else None


Budget = Annotated[Annotated[int, Field(strict=True)] | None, AfterValidator(_budget)]


@dataclass(frozen=True, config=SECTION)
class RateLimitSettings:
    """The request and token budgets per scope (user, else session, else client IP).

    A limit that is None, zero or negative in the settings creates no budget: it is None
    here. Every request budget counts over the one `window_seconds`:

    - `requests`: the chat endpoints' messages and confirmations (HTTP, SSE, WebSocket) of
      one scope.
    - `console_requests`: the staff console's chat messages and confirmations of one staff
      user, a budget apart from `requests` (the same user's token budgets are shared).
    - `anonymous_requests_per_ip`: every anonymous asker's requests from one client
      address together, counted beside each session's `requests` (a client that drops its
      session cookie gets a fresh session budget, not a fresh address). Either refusing
      refuses. Off by default: the address is the server's view of the client
      (REMOTE_ADDR, the ASGI scope's `client`), which behind a reverse proxy is the
      proxy's unless the server is told to read the forwarded one.
    """

    requests: Budget = Field(default=60, description="a whole number, or None")
    window_seconds: Seconds = Field(default=3600, description="a number above 0")
    console_requests: Budget = Field(default=600, description="a whole number, or None")
    anonymous_requests_per_ip: Budget = Field(default=None, description="a whole number, or None")
    tokens: Budget = Field(default=None, description="a whole number, or None")
    input_tokens: Budget = Field(default=None, description="a whole number, or None")
    output_tokens: Budget = Field(default=None, description="a whole number, or None")

    def token_limits(self) -> dict[str, int]:
        """The token budgets in force, by counter name (tokens, input_tokens, output_tokens)."""
        limits = {
            "tokens": self.tokens,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
        return {name: limit for name, limit in limits.items() if limit is not None}


def _lowered(terms: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(term.lower() for term in terms)


@dataclass(frozen=True, config=SECTION)
class AuditSettings:
    """What the audit trail records and where it goes.

    Attributes:
        enabled: Whether anything is recorded.
        level: "off", "messages" or "all".
        logger: Called with each sanitized event mapping (resolved from a dotted path).
        max_result_size: Longest serialized tool result kept, in characters.
        redact_fields: Key segments whose values are replaced by "[redacted]".
    """

    enabled: StrictBool = Field(default=False, description="True or False")
    level: AuditLevel = "off"
    logger: Callback | None = Field(
        default=None, description="None, a callable or a dotted path to a callable"
    )
    max_result_size: Annotated[int, Field(strict=True, ge=1)] = Field(
        default=4096, description="a whole number of at least 1"
    )
    redact_fields: Annotated[tuple[Text, ...], AfterValidator(_lowered)] = Field(
        default=SENSITIVE_KEYS, description="a list of key terms"
    )

    @property
    def active(self) -> bool:
        """Whether events are recorded at all (enabled and a level other than "off")."""
        return self.enabled and self.level != "off"


ProviderProfile = ProfileSection
"""One named provider of `provider_profiles` (chatomon.planned.sections.ProfileSection).

An explicit profile never inherits the top-level provider_config (the seed).
"""

PlannedSettings = PlannedSection
"""The `planned` section (chatomon.planned.sections.PlannedSection): opt-in planned reads.

Its keys are the reference's (enabled, catalog, roles, max_concurrent_tasks,
evidence_timeout_seconds, synthesis_timeout_seconds) and chatomon's enforced round budgets
(max_rounds, max_rounds_per_root) and per-request cap (request_timeout_seconds). Whether the
roles name known profiles of one trust group is checked with the profiles, by
`ChatSettings`; whether each role's provider builds and the catalog loads, by the system
checks. The SDK's `chatomon.planned.config` validates the same mapping with the same model.
"""

PLANNED_ROLES = REQUIRED_ROLES
"""The roles a planned turn assigns to provider profiles (chatomon.planned.config)."""
