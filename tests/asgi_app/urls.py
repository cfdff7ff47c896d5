"""The test project's URLs: the chat under the `url` setting, the console, the test helpers."""

from __future__ import annotations

from django.urls import include, path

from chatomon.django.transports.confirm import ChatConfirmView
from chatomon.django.transports.sse import ChatStreamView
from chatomon.django.urls import chat_urls
from tests.asgi_app import views

urlpatterns = [
    chat_urls(),
    path("console/", include("chatomon.console.urls")),
    # The chat views with a heartbeat every 50 ms, to see heartbeats without waiting 15 s.
    path("test/stream/", ChatStreamView.as_view(heartbeat_seconds=0.05), name="test-stream"),
    path("test/confirm/", ChatConfirmView.as_view(heartbeat_seconds=0.05), name="test-confirm"),
    path("test/csrf/", views.csrf_token, name="test-csrf"),
    path("test/login/", views.log_in, name="test-login"),
    path("test/logout/", views.log_out, name="test-logout"),
    path("test/staff/decide/", views.staff_decide, name="test-staff-decide"),
    path("test/seed/", views.seed_part, name="test-seed"),
    path("test/turns/", views.recent_turns, name="test-turns"),
    path("test/ping/", views.ping, name="test-ping"),
]
