"""Logging out closes the user's chat sockets, in every process (through the channel layer).

A socket authenticates once, at its handshake; without this a socket opened before a logout
would go on chatting, and deciding confirmations, as that user. Each socket of an
authenticated user joins `user_group(pk)`; Django's `user_logged_out` signal (sent by
`logout()` and `alogout()`) publishes `LOGOUT_EVENT_TYPE` there, and every socket of the
user closes with `CLOSE_LOGGED_OUT` (4401: 4000 + HTTP's 401, as 4403 is a denial), its
running turn cancelled and recorded aborted. All of the user's sockets close, not only
those of the session that logged out: a socket cannot tell its session's key reliably
(signed-cookie sessions change it), and a client still logged in reconnects as itself.

With no channel layer, or a layer that fails, nothing is closed (logged once per outage,
`transports.layer`).
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from chatomon.django.service import LOGOUT_EVENT_TYPE, user_group
from chatomon.django.transports.layer import attempt

__all__ = ["CLOSE_LOGGED_OUT", "close_sockets_on_logout", "close_user_sockets"]

CLOSE_LOGGED_OUT = 4401


async def close_user_sockets(user_pk: Any) -> None:
    """Close every chat socket of the user `user_pk` (no layer, or a failing one: none)."""
    layer = get_channel_layer()
    if layer is None:
        return
    await attempt(
        "closing a user's sockets",
        layer.group_send(
            user_group(user_pk),
            {
                "type": LOGOUT_EVENT_TYPE,
            },
        ),
    )


def close_sockets_on_logout(sender: Any, request: Any = None, user: Any = None, **_: Any) -> None:
    """The `user_logged_out` receiver (connected by the app): close the user's sockets.

    Synchronous, so it serves `logout()` in a sync view (WSGI or ASGI) and `alogout()`
    (Django runs a sync receiver of `asend` in a thread), where `async_to_sync` reaches
    the server's event loop.
    """
    if user is None:
        # alogout() reads `request.auser` only; a request that has just `user` (the test
        # client's alogout, hand-built requests) still names who logged out there.
        user = getattr(request, "user", None)
    if user is None or not getattr(user, "is_authenticated", False) or user.pk is None:
        return  # an anonymous logout: nobody's sockets to close
    async_to_sync(close_user_sockets)(user.pk)
