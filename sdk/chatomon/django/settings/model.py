"""`ChatSettings`: settings.CHATOMON validated, one attribute per key, with the same names.

A frozen pydantic model that refuses unknown keys. Beside the keys it offers what the
rest of chatomon builds from them: `tools` (a ToolSettings), `limits` (a LoopLimits),
`atom_config()`, the manager registry and the worker count.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, StrictBool, StrictStr, model_validator
from pydantic.dataclasses import dataclass

from chatomon._validation import Count, Seconds, Text, invalid
from chatomon.chat.loop import LoopLimits, RetryCounting
from chatomon.chat.pipeline import AtomConfig
from chatomon.chat.tools.context import ToolSettings
from chatomon.data.registration import ManagerRegistry
from chatomon.django.settings.atom import AtomSettings
from chatomon.django.settings.embed import EMBED_FORM, EmbedSites
from chatomon.django.settings.sections import (
    SECTION,
    AuditSettings,
    Callback,
    FrozenMapping,
    PlannedSettings,
    ProviderProfile,
    RateLimitSettings,
    frozen,
    resolve_dotted,
)
from chatomon.errors import ChatConfigurationError

__all__ = ["ChatSettings"]

REGISTRY_FORMS = "None, a ManagerRegistry, a callable returning one, or a dotted path"


def _url(path: str) -> str:
    if any(char.isspace() for char in path) or "://" in path or any(c in path for c in "?#"):
        raise invalid(
            f"must be a URL path such as '/chat/' (no scheme, query or spaces), got {path!r}"
        )
    stripped = path.strip("/")
    return f"/{stripped}/" if stripped else "/"


def _registry(value: Any) -> Any:
    if isinstance(value, str):
        value = resolve_dotted(value, callable_only=False)
    if value is None or isinstance(value, ManagerRegistry) or callable(value):
        return value
    raise invalid(f"must be {REGISTRY_FORMS}, got {value!r}", allowed=(REGISTRY_FORMS,))


PositiveWhole = Annotated[int, Field(strict=True, ge=1)]
MutationNames = tuple[Text, ...]
"""Mutation names: any collection of strings but a string (a set reads as ToolSettings reads it)."""


@dataclass(frozen=True, config=SECTION)
class ChatSettings:
    """settings.CHATOMON, validated: one attribute per key, with the same names.

    `tools` and `limits` hold the keys chatomon.chat validates again in its own objects
    (ToolSettings: max_results, query_timeout_seconds, the mutation lists, tool_strategy;
    LoopLimits: the max_*_per_message keys, max_retries_counts and recover_missing_tool_calls).
    """

    enabled: StrictBool = Field(default=False, description="True or False")
    url: Annotated[StrictStr, AfterValidator(_url)] = Field(
        default="/chat/", description="a URL path such as '/chat/'"
    )
    provider: Text = Field(
        default="local", description="a provider short name or dotted class path"
    )
    provider_config: FrozenMapping = Field(
        default_factory=dict, validate_default=True, description="a mapping with string keys"
    )
    provider_profiles: Annotated[Mapping[str, ProviderProfile], AfterValidator(frozen)] = Field(
        default_factory=dict,
        validate_default=True,
        description="a mapping of profile names to profiles",
    )
    planned: PlannedSettings = Field(
        default_factory=PlannedSettings, description="a mapping of planned settings"
    )
    permission: Callback | None = Field(
        default=None,
        description="None, a callable or a dotted path to a callable receiving (user, scope)",
    )
    allowed_origins: tuple[Text, ...] | None = Field(
        default=None, description="None or a list of origins"
    )
    embed: EmbedSites = Field(default_factory=dict, validate_default=True, description=EMBED_FORM)
    allowed_mutations: MutationNames = Field(default=(), description="a list of mutation names")
    confirm_mutations: MutationNames = Field(
        default=(), description="a list of names from allowed_mutations"
    )
    staff_approval_mutations: MutationNames = Field(
        default=(), description="a list of names from allowed_mutations, not in confirm_mutations"
    )
    confirm_timeout_seconds: Seconds = Field(default=30, description="a number above 0")
    max_results: PositiveWhole = Field(default=200, description="a whole number of at least 1")
    query_timeout_seconds: Seconds | None = Field(
        default=None, description="a number above 0, or None"
    )
    max_retries_per_message: Count = Field(default=3, description="a whole number of at least 0")
    max_retries_counts: RetryCounting = Field(
        default="tool_rounds",
        description=(
            "what max_retries_per_message counts: 'tool_rounds' (every round of non-mutation "
            "tool calls, the reference's meaning) or 'failed_tool_rounds' (only rounds whose "
            "tool results held an error)"
        ),
    )
    max_mutations_per_message: Count = Field(default=8, description="a whole number of at least 0")
    max_total_rounds_per_message: PositiveWhole | None = Field(
        default=None, description="a positive whole number or None"
    )
    tool_strategy: Literal["discovery", "direct"] = "discovery"
    recover_missing_tool_calls: StrictBool = Field(default=False, description="True or False")
    system_prompt: StrictStr = Field(default="", description="a string")
    max_recent_messages: PositiveWhole = Field(
        default=20, description="a whole number of at least 1"
    )
    summarize_after: Count = Field(default=10, description="a whole number of at least 0")
    ttl_hours: Seconds = Field(default=24, description="a number above 0")
    rate_limit: RateLimitSettings = Field(
        default_factory=RateLimitSettings, description="a mapping of rate limits"
    )
    audit: AuditSettings = Field(
        default_factory=AuditSettings, description="a mapping of audit settings"
    )
    atom: AtomSettings = Field(
        default_factory=AtomSettings, description="a mapping of atom settings"
    )
    staff_approval_timeout_seconds: Seconds = Field(default=86400, description="a number above 0")
    max_message_chars: PositiveWhole = Field(
        default=8000, description="a whole number of at least 1"
    )
    registry: Annotated[Any, BeforeValidator(_registry)] = Field(
        default=None, description=REGISTRY_FORMS
    )
    workers: PositiveWhole | None = Field(
        default=None, description="a whole number of at least 1, or None"
    )

    @model_validator(mode="after")
    def _check_approvals(self) -> ChatSettings:
        """Only allowed mutations can need an approval, and only one kind of approval."""
        allowed = sorted(set(self.allowed_mutations))
        for key in ("confirm_mutations", "staff_approval_mutations"):
            stray = [name for name in getattr(self, key) if name not in allowed]
            if stray:
                raise invalid(
                    f"names mutations missing from allowed_mutations: {', '.join(stray)}; "
                    "every confirmed mutation must also be allowed "
                    f"(allowed_mutations: {', '.join(allowed) or 'empty'})",
                    at=(key,),
                    value=stray,
                    allowed=allowed,
                    show_value=True,
                )
        both = sorted(set(self.confirm_mutations) & set(self.staff_approval_mutations))
        if both:
            raise invalid(
                f"names {', '.join(both)}, which cannot need both client confirmation and "
                "staff approval (confirm_mutations names them too)",
                at=("staff_approval_mutations",),
                value=both,
                show_value=True,
            )
        return self

    @model_validator(mode="after")
    def _check_planned_roles(self) -> ChatSettings:
        problem = self.planned.role_problem(self.provider_profiles)
        if problem is not None:
            raise invalid(
                f"is invalid: {problem}",
                at=("planned",),
                value=dict(self.planned.roles),
                show_value=True,
            )
        return self

    @property
    def tools(self) -> ToolSettings:
        """The settings the chat tools obey."""
        return ToolSettings(
            max_results=self.max_results,
            query_timeout_seconds=self.query_timeout_seconds,
            allowed_mutations=self.allowed_mutations,
            confirm_mutations=self.confirm_mutations,
            staff_approval_mutations=self.staff_approval_mutations,
            tool_strategy=self.tool_strategy,
        )

    @property
    def limits(self) -> LoopLimits:
        """The per-message limits of the tool loop."""
        return LoopLimits(
            max_retries_per_message=self.max_retries_per_message,
            max_mutations_per_message=self.max_mutations_per_message,
            max_total_rounds_per_message=self.max_total_rounds_per_message,
            recover_missing_tool_calls=self.recover_missing_tool_calls,
            max_retries_counts=self.max_retries_counts,
        )

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

        The check needs the filled registry, so it runs in `chat_registry`, not during
        validation.

        Raises:
            ChatConfigurationError: unknown_allowed_mutations, with a "did you mean".
        """
        known = (registry or self.manager_registry()).mutations
        unknown = [name for name in self.allowed_mutations if name not in known]
        if unknown:
            raise ChatConfigurationError.unknown_allowed_mutations(unknown, known)

    def worker_count(self) -> int:
        """How many server processes serve chat: `workers`, else WEB_CONCURRENCY, else 1."""
        if self.workers is not None:
            return self.workers
        declared = os.environ.get("WEB_CONCURRENCY", "").strip()
        return int(declared) if declared.isdigit() and int(declared) > 0 else 1
