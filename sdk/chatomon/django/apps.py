"""The configuration of the chatomon Django app."""

from django.apps import AppConfig


class ChatomonConfig(AppConfig):
    """chatomon's models (conversations, messages, turns, confirmations) and commands."""

    name = "chatomon.django"
    label = "chatomon"
    verbose_name = "chatomon"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Register the chat system checks (they run only when chat is enabled)."""
        from django.core import checks  # noqa: PLC0415 - the app registry is ready now

        from chatomon.django.settings.checks import check_chat  # noqa: PLC0415

        checks.register(check_chat, "chatomon")
