"""Who may chat, as whom, and how much: the checks every transport runs before a turn.

Permission and identity are sync, and each transport runs them together in ONE trip to a
worker thread (`sync_to_async`; the consumer through Channels' `database_sync_to_async`):
the ORM, the session and the user may be read there, and a request pays one hop for all
of them instead of one each. The HTTP views count the request against the rate limit in
that same trip (`RateLimiter.admit`: on Redis a network round trip, which would otherwise
take a trip of its own); the consumer awaits `RateLimiter.hit` on the loop.

- `permitted`: the `permission` setting, called with `(user, scope)`; a falsy answer denies
  (HTTP 403, WebSocket close 4403). It may use the ORM; an async check runs on the event
  loop through `async_to_sync`.
- `chat_identity`: anonymous chats belong to a random identity kept in the Django session,
  created (and its cookie set by SessionMiddleware) on the first request; `identify` gives
  the conversation owner and the rate-limit scope of a user (else that identity, carrying
  the client address, whose `anonymous_requests_per_ip` budget it counts in too: a
  `RateScope`, so `limiter_for(settings).hit(scope)` counts both).
- `limit_refusal`: the `rate_limited` event of a refused `RateLimiter` admission (one
  request is counted per message and per confirmation). The staff console's chat counts
  its own (`console_scope`, on `console_requests`).
- `Admitted`: what passed them, and the one way every transport starts a turn from it.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync

from chatomon.chat.pipeline import ChatService
from chatomon.chat.pipeline.wire import error_event
from chatomon.chat.store.records import Owner
from chatomon.data.actor import is_authenticated
from chatomon.django.service import owner_for
from chatomon.django.settings import ChatSettings
from chatomon.django.transports.ratelimit import (
    Admission,
    RateLimiter,
    TokenBudget,
    console_scope,
    scope_key,
)
from chatomon.django.transports.requests import ConfirmRequest, MessageRequest

__all__ = [
    "DENIED_MESSAGE",
    "RATE_LIMITED_MESSAGE",
    "SESSION_MARKER",
    "Admitted",
    "chat_identity",
    "collect",
    "console_scope",
    "denied_event",
    "existing_chat_identity",
    "identify",
    "limit_refusal",
    "limiter_for",
    "permitted",
    "scope_key",
]


logger = logging.getLogger(__name__)

SESSION_MARKER = "chatomon_chat_id"
"""The session entry holding the anonymous chat identity (see `chat_identity`)."""
DENIED_MESSAGE = "You are not allowed to use this chat."
RATE_LIMITED_MESSAGE = "Chat rate limit exceeded. Try again later."


def denied_event() -> dict[str, Any]:
    """The error event of a permission denial (HTTP 403)."""
    return error_event("permission_denied", DENIED_MESSAGE)


def permitted(settings: ChatSettings, user: Any, scope: Mapping[str, Any]) -> bool:
    """Whether the `permission` setting lets `user` in (no setting: everyone may).

    The check answers True or False (False denies, as the reference says). Any other
    answer is a configuration error (a check declared `-> None` is `chatomon.E002` at
    startup): it is logged as one on every request, never taken silently; None denies.
    Sync, for a worker thread: an async check runs on the event loop (`async_to_sync`).
    """
    check = settings.permission
    if check is None:
        return True
    if inspect.iscoroutinefunction(check):
        answer = async_to_sync(check)(user, scope)
    else:
        answer = check(user, scope)
        if inspect.isawaitable(answer):  # a sync callable that returned an awaitable
            answer = async_to_sync(_awaited)(answer)
    if not isinstance(answer, bool):
        logger.error(
            "the chat permission check %s answered %r, not True or False: "
            "a configuration error, taken as %s",
            getattr(check, "__qualname__", repr(check)),
            answer,
            bool(answer),
        )
    return bool(answer)


async def _awaited(answer: Awaitable[Any]) -> Any:
    return await answer


def existing_chat_identity(session: Any) -> str | None:
    """The anonymous chat identity a session already holds (`chat_identity`), else None.

    For requests that follow a chat (its history, a turn's resume): they make none.
    """
    identity = None if session is None else session.get(SESSION_MARKER)
    return identity if isinstance(identity, str) and identity else None


def chat_identity(session: Any, *, save: bool = False) -> str:
    """The anonymous chat identity kept in the session, created on first use.

    A random value rather than the session key: a signed-cookie session's key is its
    content, equal for two new sessions with the same data and changed by every write,
    while this value is unique and stays put until the session is flushed. `save` stores
    a new session at once (WebSocket); over HTTP, SessionMiddleware saves it and sets the
    cookie on the response.
    """
    identity = existing_chat_identity(session)
    if identity is not None:
        return identity
    identity = secrets.token_urlsafe(24)
    session[SESSION_MARKER] = identity
    if save:
        session.save()
    return identity


def identify(
    user: Any, session: Any, client_ip: str | None, *, save: bool = False
) -> tuple[Owner, str]:
    """The conversation owner and the rate-limit scope: the user's, else the session's.

    An anonymous user chats as the session's `chat_identity` (`save` as there); the
    client IP is the scope's last resort, and an anonymous scope carries it for the
    per-address budget (see `scope_key`). `client_ip` is the server's view of the client
    (REMOTE_ADDR, the ASGI scope's `client`), never a header: behind a reverse proxy the
    server must be told to take the forwarded address (uvicorn's --forwarded-allow-ips).
    """
    session_key = None if is_authenticated(user) else chat_identity(session, save=save)
    return owner_for(user, session_key), scope_key(user, session_key, client_ip)


def limiter_for(settings: ChatSettings) -> RateLimiter:
    """The rate limiter of these settings' budgets."""
    return RateLimiter(settings)


def limit_refusal(admission: Admission) -> dict[str, Any] | None:
    """The `rate_limited` event of a refused admission; None when it was allowed."""
    if admission.allowed:
        return None
    return error_event(
        "rate_limited", RATE_LIMITED_MESSAGE, retry_after_seconds=admission.retry_after_seconds
    )


@dataclass(frozen=True, slots=True)
class Admitted:
    """A request that passed every check: who asks, as which owner, with what budget."""

    settings: ChatSettings
    service: ChatService
    user: Any
    owner: Owner
    scope: str
    payload: Any

    def budget(self) -> TokenBudget:
        """The token budget of this actor for the turn."""
        return limiter_for(self.settings).budget(self.scope)

    async def run_turn(self, *, can_confirm: bool = True) -> AsyncIterator[dict[str, Any]]:
        """The events of the turn the admitted `MessageRequest` asks for.

        A conversation waiting on its client confirmation refuses the message first
        (`confirmation_pending`, whatever the surface: `ChatService.run_turn`).
        """
        message: MessageRequest = self.payload
        events = self.service.run_turn(
            self.user,
            message.text,
            message.conversation_id,
            owner=self.owner,
            budget=self.budget(),
            can_confirm=can_confirm,
            new_conversation=message.new_conversation,
        )
        async with contextlib.aclosing(events) as stream:  # type: ignore[type-var]
            async for event in stream:
                yield event

    def resolve_confirmation(self) -> AsyncIterator[dict[str, Any]]:
        """The events of the admitted `ConfirmRequest`: the claim, then the resumed turn."""
        decision: ConfirmRequest = self.payload
        return self.service.resolve_confirmation(
            self.user,
            decision.confirmation_id,
            decision.confirmed,
            owner=self.owner,
            budget=self.budget(),
        )


async def collect(events: AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every event of a turn, read to its end."""
    return [event async for event in events]
