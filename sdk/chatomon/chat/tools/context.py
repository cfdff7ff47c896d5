"""What a tool call runs with: the tool settings, the actor, and the audit hook.

Tools never read globals: everything a call may depend on arrives in its `ToolContext`.
`ToolSettings` carries the keys of `settings.CHATOMON` that concern tools, with the same
names and defaults.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from chatomon.errors import ConfigurationError
from chatomon.redaction import DEFAULT_REDACTION, Redaction

__all__ = ["AuditHook", "ToolContext", "ToolSettings", "ToolStrategy"]

logger = logging.getLogger(__name__)

ToolStrategy = Literal["discovery", "direct"]
"""discovery: the stable tool set; direct: also one query tool per exposed manager."""

AuditHook = Callable[[str, Mapping[str, Any]], None]
"""`hook(event_type, payload)`; payloads carry labels (tool, status, code), never data."""

_MUTATION_LISTS = ("allowed_mutations", "confirm_mutations", "staff_approval_mutations")


def _names(setting: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigurationError(
            f"{setting} must be a list of mutation names, got {value!r}",
            field=setting,
            value=value,
        )
    names = tuple(value)
    if not all(isinstance(name, str) and name for name in names):
        raise ConfigurationError(f"{setting} must hold mutation names", field=setting, value=names)
    return names


@dataclass(frozen=True)
class ToolSettings:
    """The settings the tools obey.

    Attributes:
        max_results: Largest query page (and number of aggregate groups) returned.
        query_timeout_seconds: Database timeout per read (PostgreSQL and SQLite), or None.
        allowed_mutations: The mutation names the mutate tool may run at all.
        confirm_mutations: Allowed names that the end user must confirm first.
        staff_approval_mutations: Allowed names that a staff member must approve first.
        tool_strategy: "discovery", or "direct" to add one query tool per manager.

    Raises:
        ConfigurationError: For a value out of range, or a confirm/staff name that is not
            in allowed_mutations (or is in both lists).
    """

    max_results: int = 200
    query_timeout_seconds: float | None = None
    allowed_mutations: tuple[str, ...] = ()
    confirm_mutations: tuple[str, ...] = ()
    staff_approval_mutations: tuple[str, ...] = ()
    tool_strategy: ToolStrategy = "discovery"

    def __post_init__(self) -> None:
        for setting in _MUTATION_LISTS:
            object.__setattr__(self, setting, _names(setting, getattr(self, setting)))
        if (
            isinstance(self.max_results, bool)
            or not isinstance(self.max_results, int)
            or (self.max_results < 1)
        ):
            raise ConfigurationError(
                f"max_results must be a positive integer, got {self.max_results!r}",
                field="max_results",
                value=self.max_results,
            )
        timeout = self.query_timeout_seconds
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ConfigurationError(
                f"query_timeout_seconds must be a positive number or None, got {timeout!r}",
                field="query_timeout_seconds",
                value=timeout,
            )
        if self.tool_strategy not in ("discovery", "direct"):
            raise ConfigurationError(
                f"tool_strategy must be 'discovery' or 'direct', got {self.tool_strategy!r}",
                field="tool_strategy",
                value=self.tool_strategy,
                allowed=("discovery", "direct"),
            )
        self._check_confirmations()

    def _check_confirmations(self) -> None:
        allowed = set(self.allowed_mutations)
        for setting in ("confirm_mutations", "staff_approval_mutations"):
            stray = [name for name in getattr(self, setting) if name not in allowed]
            if stray:
                raise ConfigurationError(
                    f"{setting} names mutations missing from allowed_mutations: "
                    f"{', '.join(stray)}; every confirmed mutation must also be allowed",
                    field=setting,
                    value=stray,
                    allowed=sorted(allowed),
                )
        both = sorted(set(self.confirm_mutations) & set(self.staff_approval_mutations))
        if both:
            raise ConfigurationError(
                f"{', '.join(both)} cannot need both client confirmation and staff approval",
                field="staff_approval_mutations",
                value=both,
            )

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any]) -> ToolSettings:
        """The tool settings among `settings` (a CHATOMON mapping); other keys are ignored."""
        known = {item.name for item in fields(cls)}
        return cls(**{key: value for key, value in settings.items() if key in known})

    def approver(self, mutation: str) -> str | None:
        """Who must approve `mutation` first: "client", "staff", or None."""
        if mutation in self.staff_approval_mutations:
            return "staff"
        if mutation in self.confirm_mutations:
            return "client"
        return None


@dataclass(frozen=True)
class ToolContext:
    """What one tool call runs with.

    Attributes:
        actor: Who the call acts for (`is_authenticated` and `id`), or None.
        settings: The limits and mutation lists that apply.
        audit: Optional `hook(event_type, payload)` told about every call.
        redaction: Which keys are sensitive (chatomon.redaction): a write to one is never
            answered "unchanged" (that would confirm a guessed value).
    """

    actor: Any = None
    settings: ToolSettings = field(default_factory=ToolSettings)
    audit: AuditHook | None = None
    redaction: Redaction = DEFAULT_REDACTION

    def emit(self, event_type: str, payload: Mapping[str, Any]) -> None:
        """Tell the audit hook; a failing hook is logged, never the call's failure."""
        if self.audit is None:
            return
        try:
            self.audit(event_type, payload)
        except Exception:
            logger.warning("audit hook failed for %s", event_type, exc_info=True)
