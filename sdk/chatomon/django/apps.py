"""The configuration of the chatomon Django app."""

from django.apps import AppConfig


class ChatomonConfig(AppConfig):
    """chatomon's models (conversations, messages, turns, confirmations) and commands."""

    name = "chatomon.django"
    label = "chatomon"
    verbose_name = "chatomon"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Register the chat system checks, and close a user's chat sockets on logout."""
        # The app registry is ready now: these import models and the channel layer.
        from django.contrib.auth.signals import user_logged_out  # noqa: PLC0415
        from django.core import checks  # noqa: PLC0415

        from chatomon.django.settings.checks import check_chat  # noqa: PLC0415
        from chatomon.django.transports.logout import close_sockets_on_logout  # noqa: PLC0415

        checks.register(check_chat, "chatomon")
        user_logged_out.connect(close_sockets_on_logout, dispatch_uid="chatomon-logout")
