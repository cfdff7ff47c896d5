"""URLs of the console tests: the console where a project would mount it."""

from __future__ import annotations

from django.urls import include, path

urlpatterns = [path("console/", include("chatomon.console.urls"))]
