"""WebSocket origin checks: the `allowed_origins` setting, else Django's ALLOWED_HOSTS.

The list is read for every connection, so a changed CHATOMON (or `override_settings` in
a test) applies at once. A refused origin gets Channels' handshake denial (HTTP 403).
"""

from __future__ import annotations

from typing import Any

from channels.security.websocket import AllowedHostsOriginValidator, OriginValidator

from chatomon.django.settings import chat_settings

__all__ = ["ChatOriginValidator"]


class ChatOriginValidator:
    """ASGI middleware: only WebSocket connections from an allowed origin reach `application`.

    `allowed_origins` holds patterns as Channels' `OriginValidator` reads them
    ("https://example.com", "http://.example.com:8000", "*"); when it is empty, Channels'
    `AllowedHostsOriginValidator` applies ALLOWED_HOSTS (with localhost under DEBUG).
    """

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        """Check the Origin header, then hand the connection on (or deny it)."""
        allowed = chat_settings().allowed_origins
        if allowed:
            validator = OriginValidator(self.application, list(allowed))
        else:
            validator = AllowedHostsOriginValidator(self.application)
        return await validator(scope, receive, send)
