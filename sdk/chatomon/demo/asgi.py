"""The demo's ASGI application: Django over HTTP (with its static files) and the WebSocket.

Django runs on its own `ASGIHandler` (static files through the demo's URLs). The
WebSocket is chatomon's chat route, authenticated by the session and origin-checked
against ALLOWED_HOSTS.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatomon.demo.settings")
# Set Django up before importing anything that touches models (the WebSocket consumer).
django_application = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402

from chatomon.django.routing import chat_websocket_application  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_application,
        "websocket": chat_websocket_application(),
    }
)
