"""``{% load chatomon_console_partials %}``: partialdef/partial on every supported Django.

Django 6 has the tags built in, so this library adds nothing there; on Django 5.2 it is
django-template-partials' library (add ``"template_partials"`` to ``INSTALLED_APPS`` so
``"template.html#name"`` loads a partial).
"""

from __future__ import annotations

from importlib import import_module

import django
from django import template

__all__ = ["register"]

register: template.Library = (
    template.Library()
    if django.VERSION >= (6, 0)
    else import_module("template_partials.templatetags.partials").register
)
