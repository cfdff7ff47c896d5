"""The console's own settings: ``settings.CHATOMON_CONSOLE``, validated like CHATOMON.

```python
CHATOMON_CONSOLE = {
    "four_eyes": True,  # the default: nobody approves a change they asked for themselves
    "approval_permissions": {"updatePartCost": "inventory.approve_cost_change"},
}
```

`four_eyes` (default True): the person who asked for a change (the owner of the
conversation that asked for it) cannot approve it; they may still reject it.
`approval_permissions`: mutation name → one more Django permission approving it needs,
beside ``chatomon.approve_mutation`` which every approval needs.

The mapping is a frozen pydantic model that refuses unknown keys (`chatomon._validation`);
a wrong value raises `ConfigurationError` naming ``CHATOMON_CONSOLE['key']``.
`console_settings()` caches it until `setting_changed` reports a new CHATOMON_CONSOLE.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from pydantic import ConfigDict, Field, StrictBool, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass

from chatomon._validation import Text, problem_of
from chatomon.errors import ConfigurationError

__all__ = ["ConsoleSettings", "console_settings"]

SETTING = "CHATOMON_CONSOLE"


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class ConsoleSettings:
    """How the console lets staff decide approvals.

    Attributes:
        four_eyes: Whether the requester of a change is refused its approval.
        approval_permissions: Mutation name → the extra permission approving it needs.
    """

    four_eyes: StrictBool = Field(default=True, description="True or False")
    approval_permissions: dict[Text, Text] = Field(
        default_factory=dict,
        description='a mapping of mutation names to permissions ("app_label.codename")',
    )


ADAPTER = TypeAdapter(ConsoleSettings)


def _label(key: str) -> str:
    label = SETTING
    for part in key.split("."):
        label += f"[{part!r}]"
    return label


def build_console_settings(raw: Any) -> ConsoleSettings:
    """Validate a CHATOMON_CONSOLE value (None: the defaults).

    Raises:
        ConfigurationError: Naming the wrong key, its value and what is allowed.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigurationError(
            f"{SETTING} must be a mapping, got {type(raw).__name__}",
            field=SETTING,
            value=type(raw).__name__,
            allowed=("a mapping",),
        )
    try:
        return ADAPTER.validate_python(dict(raw))
    except ValidationError as error:
        problem = problem_of(error, ConsoleSettings)
        raise ConfigurationError(
            problem.message(_label(problem.key)),
            field=problem.key,
            value=problem.value,
            allowed=problem.allowed,
        ) from None


@lru_cache(maxsize=1)
def console_settings() -> ConsoleSettings:
    """The validated settings, cached until settings.CHATOMON_CONSOLE changes."""
    return build_console_settings(getattr(django_settings, SETTING, None))


def _forget_cached_settings(*, setting: str, **_: Any) -> None:
    if setting == SETTING:
        console_settings.cache_clear()


setting_changed.connect(_forget_cached_settings, dispatch_uid="chatomon.console.conf")
