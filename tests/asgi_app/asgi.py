"""The test project's ASGI application: Django for HTTP, the chat consumer for WebSocket."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.asgi_app.settings")

from django.core.asgi import get_asgi_application

# Sets Django up before the routing imports.
django_application = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402

from chatomon.django.routing import chat_websocket_application  # noqa: E402

application = ProtocolTypeRouter(
    {"http": django_application, "websocket": chat_websocket_application()}
)
