"""The test app's configuration."""

from django.apps import AppConfig


class TestAppConfig(AppConfig):
    """Toy materials, parts and projects as Django models."""

    name = "tests.testapp"
    label = "testapp"
    default_auto_field = "django.db.models.BigAutoField"
