"""The WebSocket route of the chat, for the project's ASGI application.

```python
# asgi.py
from django.core.asgi import get_asgi_application

django_asgi = get_asgi_application()          # first: it sets Django up
from channels.routing import ProtocolTypeRouter
from chatomon.django.routing import chat_websocket_application

application = ProtocolTypeRouter({
    "http": django_asgi,
    "websocket": chat_websocket_application(),
})
```

`websocket_urlpatterns` is the route alone (`ChatConsumer` at the `url` setting, default
"chat/") for projects that combine it with their own routes:
`chat_websocket_application([*websocket_urlpatterns, *mine])`. The application is wrapped
in Channels' `AuthMiddlewareStack` (session and `scope["user"]`) and `ChatOriginValidator`
(`allowed_origins`, else ALLOWED_HOSTS).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from django.urls import URLPattern, path

from chatomon.django.settings import chat_settings
from chatomon.django.transports.origins import ChatOriginValidator
from chatomon.django.transports.websocket import ChatConsumer

__all__ = ["chat_websocket_application", "websocket_urlpatterns"]

websocket_urlpatterns: list[URLPattern] = [
    # Channels' URLRouter takes Django's path(); django-stubs types it for views only.
    path(chat_settings().url_prefix, ChatConsumer.as_asgi(), name="chatomon-websocket"),  # type: ignore[arg-type]
]


def chat_websocket_application(routes: Sequence[Any] | None = None) -> Any:
    """The WebSocket app: `routes` (default: the chat route), authenticated, origin-checked."""
    chosen = list(websocket_urlpatterns if routes is None else routes)
    return ChatOriginValidator(AuthMiddlewareStack(URLRouter(chosen)))
