"""Visitor tokens at the transports: CORS and bearer tokens over HTTP/SSE, the socket's gate.

Over HTTP and SSE (`embeddable`) a cross-origin request answers CORS (the preflight, and
`Access-Control-Allow-Origin` on every answer, refusals included, so the widget can show
why); a request with a token skips the CSRF check (the token is sent by the page's script,
never by the browser on its own, so there is nothing to forge) and runs as the visitor
(`chatomon.django.embed`); a cross-origin request without one is refused (401
`embed_token_required`). Over WebSocket (`VisitorSocketGate`) the token travels as a
subprotocol, `chatomon.bearer.<token>` (a browser cannot set a socket's headers); its
origin is checked against the site's, the server answers with the `chatomon` subprotocol,
and a bad token gets an `error` event and close code 4401.

A site's `user` callable reads the database: it runs through
`chatomon.django.persistence.connections.released` (a connection the database closed while
idle is replaced), and a database that cannot be reached is `store_unavailable`, as for
every chat request: 503 over HTTP and SSE, `chat_error` and close 1011 over WebSocket.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.models import AnonymousUser
from django.contrib.sessions.backends.base import SessionBase
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseBase

from chatomon.chat.pipeline.wire import store_unavailable_event
from chatomon.django.embed import EmbedRefused, Visitor, check_token, embed_sites
from chatomon.django.persistence.connections import released
from chatomon.django.transports.admission import SESSION_MARKER
from chatomon.django.transports.websocket import USER_UNAVAILABLE

__all__ = [
    "CLOSE_UNAUTHORIZED",
    "SUBPROTOCOL",
    "TOKEN_SUBPROTOCOL_PREFIX",
    "VisitorSession",
    "VisitorSocketGate",
    "cors_headers",
    "embeddable",
    "visitor_user",
]

SUBPROTOCOL = "chatomon"
"""The WebSocket subprotocol the server answers a visitor's socket with."""
TOKEN_SUBPROTOCOL_PREFIX = "chatomon.bearer."  # noqa: S105 - a name prefix, no secret
"""A visitor's socket offers its token as the subprotocol `chatomon.bearer.<token>`."""
CLOSE_UNAUTHORIZED = 4401
logger = logging.getLogger(__name__)
_ALLOWED_HEADERS = "Authorization, Content-Type, Accept, Last-Event-ID, X-CSRFToken"


class VisitorSession(SessionBase):
    """The session of a visitor's request: its chat identity, stored nowhere.

    It stands in for the cookie session on that request (`identify` reads the identity
    from it). A session engine of its own (Django's `SessionBase`): nothing is loaded,
    saved or sent as a cookie, since the token gives the identity on every request.
    """

    def __init__(self, visitor: Visitor) -> None:
        super().__init__()
        self[SESSION_MARKER] = visitor.identity
        self.modified = False  # nothing for SessionMiddleware to save

    def load(self) -> dict[str, Any]:
        """A visitor's session starts empty: nothing is stored between requests."""
        return {}

    def exists(self, session_key: str | None) -> bool:
        """No visitor session is ever stored."""
        return False

    def create(self) -> None:
        """Nothing to create: the session lives as long as the request."""

    def save(self, must_create: bool = False) -> None:
        """Nothing to save: the identity comes from the token every time."""

    def delete(self, session_key: str | None = None) -> None:
        """Nothing stored, nothing to delete."""


async def visitor_user(visitor: Visitor) -> Any:
    """The site's user for the visitor (its `user` callable), else AnonymousUser.

    Raises:
        OperationalError, InterfaceError: The callable could not reach the database.
    """
    site = embed_sites()[visitor.site]
    if site.user is None:
        return AnonymousUser()
    found = await sync_to_async(released)(site.user, visitor.site, visitor.subject)
    return AnonymousUser() if found is None else found


def cors_headers(origin: str) -> dict[str, str]:
    """The CORS headers of an answer to `origin` (no credentials: the token is the key)."""
    return {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Expose-Headers": "Retry-After",
        "Vary": "Origin",
    }


def _same_origin(request: HttpRequest, origin: str) -> bool:
    return origin == f"{request.scheme}://{request.get_host()}"


Refuse = Callable[[HttpRequest, int, dict[str, Any]], HttpResponse]
View = Callable[..., Any]
"""An async view (as Django's `as_view` of an async view gives it)."""


def embeddable(cookie_view: View, token_view: View, refuse: Refuse) -> View:
    """A chat view answering embedding pages too (see the module docstring).

    `cookie_view` answers same-origin requests as before (session, CSRF); `token_view`
    answers requests carrying a visitor token, as that visitor; `refuse` writes a refusal
    in the endpoint's format.
    """

    async def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        origin = request.headers.get("Origin")
        cross = origin is not None and not _same_origin(request, origin)
        if request.method == "OPTIONS" and cross:
            return _preflight(str(origin))
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            if not cross:
                answered: HttpResponseBase = await cookie_view(request, *args, **kwargs)
                return answered
            refused = EmbedRefused(
                "embed_token_required",
                "This chat can only be embedded on another site with a visitor token.",
            )
            return _with_cors(refuse(request, refused.status, refused.event()), origin)
        try:
            visitor = check_token(token, origin)
        except EmbedRefused as refused:
            return _with_cors(refuse(request, refused.status, refused.event()), origin)
        try:
            user = await visitor_user(visitor)
        except (OperationalError, InterfaceError) as error:
            logger.error("a visitor's request could not read its user: %s", error)
            return _with_cors(refuse(request, 503, store_unavailable_event()), origin)

        async def visitor_auser() -> Any:
            return user

        # The visitor, not whoever the cookies name: both ways Django offers the user.
        request.user, request.auser = user, visitor_auser
        request.session = VisitorSession(visitor)
        return _with_cors(await token_view(request, *args, **kwargs), origin)

    return view


def _preflight(origin: str) -> HttpResponse:
    # Answered for any origin: the request itself is checked, and refused readably.
    response = HttpResponse(status=204)
    for name, value in cors_headers(origin).items():
        response[name] = value
    response["Access-Control-Allow-Methods"] = "GET, POST"
    response["Access-Control-Allow-Headers"] = _ALLOWED_HEADERS
    response["Access-Control-Max-Age"] = "600"
    return response


def _with_cors(response: HttpResponseBase, origin: str | None) -> HttpResponseBase:
    if origin is not None:
        for name, value in cors_headers(origin).items():
            response[name] = value
    return response


def _socket_token(scope: Mapping[str, Any]) -> str | None:
    for offered in scope.get("subprotocols") or ():
        if isinstance(offered, str) and offered.startswith(TOKEN_SUBPROTOCOL_PREFIX):
            return offered[len(TOKEN_SUBPROTOCOL_PREFIX) :]
    return None


def _socket_origin(scope: Mapping[str, Any]) -> str | None:
    for name, value in scope.get("headers") or ():
        if name == b"origin":
            return bytes(value).decode("latin1")
    return None


ASGIApp = Callable[[Any, Any, Any], Awaitable[Any]]


class VisitorSocketGate:
    """ASGI middleware: a socket offering a visitor token goes to `visitor_app` as the visitor.

    Its origin must be one of the site's (checked here, in place of the project's
    `allowed_origins`); the scope gets the visitor's `user` and `VisitorSession`, and the
    handshake's answer names the `chatomon` subprotocol. A bad token is accepted, told
    why (an `error` event) and closed with 4401, so the page can say so. Every other
    socket goes to `default_app` (the project's origin check, sessions, authentication).
    """

    def __init__(self, default_app: ASGIApp, visitor_app: ASGIApp) -> None:
        self.default_app = default_app
        self.visitor_app = visitor_app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        """Route the connection by whether it carries a visitor token."""
        token = _socket_token(scope) if scope.get("type") == "websocket" else None
        if token is None:
            return await self.default_app(scope, receive, send)
        try:
            visitor = check_token(token, _socket_origin(scope))
        except EmbedRefused as refused:
            return await _refuse_socket(receive, send, refused)
        scope = {**scope, "session": VisitorSession(visitor)}
        try:
            scope["user"] = await visitor_user(visitor)
        except (OperationalError, InterfaceError) as error:
            # As ReleasedAuthMiddleware does: the consumer answers store_unavailable.
            logger.error("a visitor's socket could not read its user: %s", error)
            scope["user"] = AnonymousUser()
            scope[USER_UNAVAILABLE] = error

        async def answering(message: Any) -> None:
            if message.get("type") == "websocket.accept" and not message.get("subprotocol"):
                message = {**message, "subprotocol": SUBPROTOCOL}
            await send(message)

        return await self.visitor_app(scope, receive, answering)


async def _refuse_socket(receive: Any, send: Any, refused: EmbedRefused) -> None:
    message = await receive()
    if message.get("type") != "websocket.connect":
        return
    await send({"type": "websocket.accept", "subprotocol": SUBPROTOCOL})
    await send({"type": "websocket.send", "text": json.dumps(refused.event())})
    await send({"type": "websocket.close", "code": CLOSE_UNAUTHORIZED})
