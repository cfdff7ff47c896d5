"""Finding the managers of a Django project: each installed app's `chat.py` module.

Like `admin.py`: `autodiscover()` imports `<app>.chat` for every installed app that has
one; those modules register managers and mutations in `chatomon.data.registry`. The
chatomon Django app calls it from its `ready()`.
"""

from __future__ import annotations

from chatomon.data.registration import ManagerRegistry, registry

__all__ = ["autodiscover"]

MODULE_NAME = "chat"


def autodiscover() -> ManagerRegistry:
    """Import every installed app's `chat` module; returns the default registry.

    An app without a chat module is skipped; an error inside one propagates.
    """
    from django.utils.module_loading import autodiscover_modules  # noqa: PLC0415 - lazy Django

    autodiscover_modules(MODULE_NAME)
    return registry
