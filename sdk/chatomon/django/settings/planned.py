"""settings.CHATOMON's planned turns: `get_planned_chat_settings()`, cached like `chat_settings`.

```python
from chatomon.django.settings import get_planned_chat_settings

planned = get_planned_chat_settings()  # a chatomon.planned.config.PlannedChatSettings
planned.enabled, planned.roles["planner"], planned.trust_group
```

The whole of CHATOMON is validated first (`chat_settings()`: the same errors as everywhere
else), then its provider, provider_config, provider_profiles and planned keys are normalized
by `chatomon.planned.config.get_planned_chat_settings`. The result is cached until
`setting_changed` reports a new CHATOMON.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.core.signals import setting_changed

from chatomon.planned import config

__all__ = ["get_planned_chat_settings"]


@lru_cache(maxsize=1)
def get_planned_chat_settings() -> config.PlannedChatSettings:
    """The planned-chat settings of settings.CHATOMON (disabled unless planned.enabled).

    Raises:
        ChatConfigurationError: CHATOMON is invalid (naming the first wrong key).
    """
    # Imported here: the package imports this module to re-export this function.
    from chatomon.django.settings import chat_settings, get_chat_settings  # noqa: PLC0415

    chat_settings()  # the usual validation and its messages, for every key
    return config.get_planned_chat_settings(get_chat_settings())


def _forget_cached_settings(*, setting: str, **_: Any) -> None:
    if setting == "CHATOMON":
        get_planned_chat_settings.cache_clear()


setting_changed.connect(_forget_cached_settings, dispatch_uid="chatomon.django.settings.planned")
