"""The configuration of the demo's Django app."""

from django.apps import AppConfig


class DemoConfig(AppConfig):
    """A small manufacturing company: materials, suppliers, parts and projects."""

    name = "chatomon.demo"
    label = "chatomon_demo"
    verbose_name = "chatomon demo"
    default_auto_field = "django.db.models.BigAutoField"
