"""The console's own settings: ``settings.CHATOMON_CONSOLE``, validated like CHATOMON.

```python
CHATOMON_CONSOLE = {
    "four_eyes": True,  # the default: nobody approves a change they asked for themselves
    "approval_permissions": {"updatePartCost": "inventory.approve_cost_change"},
    # What a million tokens cost, per model: the turn page prices each model round.
    "prices": {"gpt-4.1-mini": {"input": "0.40", "output": "1.60"}},
    "currency": "USD",
}
```

`four_eyes` (default True): the person who asked for a change (the owner of the
conversation that asked for it) cannot approve it; they may still reject it.
`approval_permissions`: mutation name → one more Django permission approving it needs,
beside ``chatomon.approve_mutation`` which every approval needs.
`prices`: model name → the price of a million input and of a million output tokens
(decimal strings or numbers, at least 0), read by the turn page's usage and cost
(`console.usage_costs`); a model round is priced by the model its report names, or by its
provider's class name where the report names no model. `currency` (default "USD") labels them.

The mapping is a frozen pydantic model that refuses unknown keys (`chatomon._validation`);
a wrong value raises `ConfigurationError` naming ``CHATOMON_CONSOLE['key']``.
`console_settings()` caches it until `setting_changed` reports a new CHATOMON_CONSOLE.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from typing import Annotated, Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from pydantic import ConfigDict, Field, StrictBool, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass

from chatomon._validation import Text, problem_of
from chatomon.errors import ConfigurationError

__all__ = ["ConsoleSettings", "ModelPrice", "console_settings"]

SETTING = "CHATOMON_CONSOLE"


Price = Annotated[
    Decimal, Field(ge=0, allow_inf_nan=False, description='a price of at least 0, e.g. "0.40"')
]


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class ModelPrice:
    """What a million tokens of one model cost.

    Attributes:
        input: The price of a million input (prompt) tokens.
        output: The price of a million output (completion) tokens.
    """

    input: Price
    output: Price


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class ConsoleSettings:
    """How the console lets staff decide approvals, and how it prices model usage.

    Attributes:
        four_eyes: Whether the requester of a change is refused its approval.
        approval_permissions: Mutation name → the extra permission approving it needs.
        prices: Model name → what a million of its input and output tokens cost.
        currency: The label of those prices ("USD", "EUR", ...).
    """

    four_eyes: StrictBool = Field(default=True, description="True or False")
    approval_permissions: dict[Text, Text] = Field(
        default_factory=dict,
        description='a mapping of mutation names to permissions ("app_label.codename")',
    )
    prices: dict[Text, ModelPrice] = Field(
        default_factory=dict,
        description='a mapping of model names to {"input": price, "output": price}',
    )
    currency: Text = Field(default="USD", description='a currency label such as "USD"')


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
        raise ConfigurationError.from_problem(problem, _label(problem.key)) from None


@lru_cache(maxsize=1)
def console_settings() -> ConsoleSettings:
    """The validated settings, cached until settings.CHATOMON_CONSOLE changes."""
    return build_console_settings(getattr(django_settings, SETTING, None))


def _forget_cached_settings(*, setting: str, **_: Any) -> None:
    if setting == SETTING:
        console_settings.cache_clear()


setting_changed.connect(_forget_cached_settings, dispatch_uid="chatomon.console.conf")
