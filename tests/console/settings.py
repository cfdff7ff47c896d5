"""Settings for the console tests: the shared test settings plus what a console site needs.

Run with ``--ds=tests.console.settings`` until tests/django_settings.py carries these apps.
"""

from __future__ import annotations

import django
from tests.django_settings import *  # noqa: F403
from tests.django_settings import INSTALLED_APPS as SHARED_APPS

# Django 6 has template partials built in; 5.2 needs django-template-partials.
PARTIALS_APP = [] if django.VERSION >= (6, 0) else ["template_partials"]

INSTALLED_APPS = [
    *SHARED_APPS,
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    *PARTIALS_APP,
    "chatomon.console",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]
ROOT_URLCONF = "tests.console.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
STATIC_URL = "/static/"
LOGIN_URL = "chatomon_console:login"
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
