"""Django configuration of the staff console app."""

from __future__ import annotations

from pathlib import Path

from django.apps import AppConfig

__all__ = ["ConsoleConfig", "resource_root"]


def resource_root() -> Path:
    """The folder holding the console's ``templates/`` and ``static/``.

    An installed wheel carries them inside this package; a source checkout keeps them at
    the top of the repository (DESIGN.md §3), one level above this folder.
    """
    package = Path(__file__).resolve().parent
    return package if (package / "templates").is_dir() else package.parent


class ConsoleConfig(AppConfig):
    """The staff console; its templates and static files are found through `path`."""

    name = "chatomon.console"
    label = "chatomon_console"
    verbose_name = "chatomon console"
    default_auto_field = "django.db.models.BigAutoField"
    path = str(resource_root())

    def ready(self) -> None:
        """Register the console's system checks."""
        from . import checks  # noqa: F401, PLC0415 - registering is importing
