"""The configuration of the chatomon Django app."""

from django.apps import AppConfig


class ChatomonConfig(AppConfig):
    """chatomon's models (conversations, messages, turns, confirmations) and commands."""

    name = "chatomon.django"
    label = "chatomon"
    verbose_name = "chatomon"
    default_auto_field = "django.db.models.BigAutoField"
