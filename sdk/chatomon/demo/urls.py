"""The demo's URLs: landing page, console, chat endpoints (the WebSocket is in asgi.py)."""

from __future__ import annotations

from django.urls import include, path

from . import views

demo_patterns = (
    [path("", views.home, name="home"), path("favicon.ico", views.no_icon, name="favicon")],
    "chatomon_demo",
)

urlpatterns = [
    path("", include(demo_patterns)),
    path("console/", include("chatomon.console.urls")),
    path("chat/", include("chatomon.django.urls")),
]
