"""The demo's URLs: landing page, console, chat endpoints (the WebSocket is in asgi.py).

Static files are served by `django.contrib.staticfiles.views.serve` from the apps' own
folders, with DEBUG off too (`insecure`, as `runserver --insecure` does): the demo is a
local showcase that collects nothing at run time, not a deployment.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.staticfiles.views import serve
from django.urls import include, path, re_path

from . import views

demo_patterns = (
    [path("", views.home, name="home"), path("favicon.ico", views.no_icon, name="favicon")],
    "chatomon_demo",
)

urlpatterns = [
    path("", include(demo_patterns)),
    path("console/", include("chatomon.console.urls")),
    path("chat/", include("chatomon.django.urls")),
    re_path(rf"^{settings.STATIC_URL.lstrip('/')}(?P<path>.*)$", serve, {"insecure": True}),
]
