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
in Channels' session middleware, `ReleasedAuthMiddleware` (`scope["user"]`) and
`ChatOriginValidator` (`allowed_origins`, else ALLOWED_HOSTS); a socket that offers a
visitor token (a page of a site in `CHATOMON["embed"]`) is routed around them by
`VisitorSocketGate` (`chatomon.django.transports.embedding`): its origin is checked against
the site's, and it runs as the visitor, with no cookie session.

`ReleasedAuthMiddleware` is Channels' `AuthMiddleware` reading the user (Channels'
`get_user`) through `chatomon.django.persistence.connections.released`: the handshake's
worker thread may hold a connection the database closed while it sat idle (kept by
`CONN_MAX_AGE`, or lent by a pool, without `CONN_HEALTH_CHECKS`), and Channels' own
lookup fails on it, answering the handshake with HTTP 500. Here the dead connection is
dropped and the lookup runs again. When the database cannot be reached at all, the user
is `AnonymousUser` (never more than the visitor is allowed) and `scope[USER_UNAVAILABLE]`
holds the error: `ChatConsumer` then sends a `chat_error` (`reason: "store_unavailable"`)
and closes with 1011, and a project's own consumers can do the same.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from asgiref.sync import async_to_sync
from channels.auth import get_user
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from channels.routing import URLRouter
from channels.sessions import SessionMiddlewareStack
from django.contrib.auth.models import AnonymousUser
from django.db import InterfaceError, OperationalError
from django.urls import URLPattern, path

from chatomon.django.persistence.connections import released
from chatomon.django.settings import chat_settings
from chatomon.django.transports.embedding import VisitorSocketGate
from chatomon.django.transports.origins import ChatOriginValidator
from chatomon.django.transports.websocket import USER_UNAVAILABLE, ChatConsumer

__all__ = [
    "USER_UNAVAILABLE",
    "ReleasedAuthMiddleware",
    "chat_websocket_application",
    "websocket_urlpatterns",
]

logger = logging.getLogger(__name__)

websocket_urlpatterns: list[URLPattern] = [
    # Channels' URLRouter takes Django's path(); django-stubs types it for views only.
    path(chat_settings().url_prefix, ChatConsumer.as_asgi(), name="chatomon-websocket"),  # type: ignore[arg-type]
]


class ReleasedAuthMiddleware(BaseMiddleware):
    """Channels' `AuthMiddleware`, its user read through `released` (module docstring).

    Needs Channels' session middleware above it, as `AuthMiddleware` does.
    """

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        """Call the inner application with `scope["user"]` set."""
        if "session" not in scope:
            raise ValueError("ReleasedAuthMiddleware needs Channels' SessionMiddleware above it.")
        scope = dict(scope)
        try:
            # One trip to the thread Channels' own lookup runs on (thread-sensitive), where
            # `released` replaces a dead connection around it; `get_user` runs there too.
            scope["user"] = await database_sync_to_async(released)(async_to_sync(get_user), scope)
        except (OperationalError, InterfaceError) as error:
            logger.error("a WebSocket handshake could not read its user: %s", error)
            scope["user"] = AnonymousUser()
            scope[USER_UNAVAILABLE] = error
        return await super().__call__(scope, receive, send)


def chat_websocket_application(routes: Sequence[Any] | None = None) -> Any:
    """The WebSocket app: `routes` (default: the chat route), authenticated, origin-checked.

    A socket with a visitor token reaches the same routes as that visitor (module docstring).
    """
    chosen = list(websocket_urlpatterns if routes is None else routes)
    router = URLRouter(chosen)
    return VisitorSocketGate(
        ChatOriginValidator(SessionMiddlewareStack(ReleasedAuthMiddleware(router))), router
    )
