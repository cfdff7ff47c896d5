# The models and the channel layer need a ready app registry: imported where they are used.
# ruff: noqa: PLC0415
"""The Django wiring of `ChatService`: one service per process and settings, owners, groups.

`available_service(settings)` is what every transport calls: `chat_service()`, or None
(logged once) when the provider cannot be built. `chat_service()` is the service built
from `chat_settings()` by `build_chat_service`, kept as long as those settings stay the
same object (a changed CHATOMON, or `override_settings`, builds a new one). One provider
per process rather than one per request: a provider holds connections, a local model
takes seconds to load.

Resumed turns (staff approvals, expiries, a confirmation resolved in another process) are
published to the conversation's channel-layer group, `conversation_group(id)`, which every
socket streaming that conversation has joined. Every socket of an authenticated user also
joins `user_group(pk)`, through which a logout closes them (`transports.logout`). A layer
that fails (Redis down) drops what is published, logged once per outage
(`transports.layer`): the turn itself goes on.

```python
service = chat_service()
owner, _ = identify(request.user, request.session, None)  # transports.admission
async for event in service.run_turn(request.user, "Which parts?", owner=owner):
    ...
```
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from chatomon.chat.pipeline import ChatService
from chatomon.chat.pipeline.activity import Activity
from chatomon.chat.pipeline.wire import GENERIC_ERROR_MESSAGE
from chatomon.chat.store.records import Owner
from chatomon.chat.tools.context import AuditHook
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.actor import is_authenticated
from chatomon.django.audit.signals import send_chat_error
from chatomon.django.persistence.connections import in_tool_worker
from chatomon.django.settings import ChatSettings, chat_settings, get_planned_chat_settings
from chatomon.planned import PlannedTurns
from chatomon.providers.registry import build_provider

__all__ = [
    "GROUP_EVENT_TYPE",
    "LOGOUT_EVENT_TYPE",
    "available_service",
    "build_chat_service",
    "chat_service",
    "conversation_group",
    "load_actor",
    "owner_for",
    "publish_event",
    "user_group",
]

GROUP_EVENT_TYPE = "chat.event"
"""The channel-layer message type carrying one chat event (the consumer's `chat_event`)."""
LOGOUT_EVENT_TYPE = "chat.logout"
"""The channel-layer message type closing a user's sockets (the consumer's `chat_logout`)."""

logger = logging.getLogger(__name__)

_built: tuple[ChatSettings, ChatService] | None = None
"""The service of the settings object it was built for (older settings are gone for good)."""
# Held for a whole build (long: a local model loads); reading `_built` needs no lock (one
# reference). Reentrant: a build that asked for the service again would otherwise hang.
_build_lock = threading.RLock()


def conversation_group(conversation_id: str | UUID) -> str:
    """The channel-layer group of a conversation (ASCII, well under the 100-char limit).

    Examples:
        >>> conversation_group("6f1c2a4e-0000-4000-8000-000000000001")
        'chatomon.conversation.6f1c2a4e000040008000000000000001'
    """
    key = conversation_id if isinstance(conversation_id, UUID) else UUID(str(conversation_id))
    return f"chatomon.conversation.{key.hex}"


def user_group(user_pk: Any) -> str:
    """The channel-layer group of a user's sockets (one per primary key, never shared).

    A key of group-safe characters (ASCII letters, digits, `-_.`), up to 80, is used as it
    is; any other is hashed (SHA-256), so that two users never share a group (replacing
    the unsafe characters would give "a b" and "a_b" one group, and a logout would close
    the other's sockets) and the name stays under Channels' 100 characters.

    Examples:
        >>> user_group(42)
        'chatomon.user.42'
        >>> user_group("a b/c") != user_group("a_b_c")
        True
        >>> len(user_group("x" * 500)) < 100
        True
    """
    key = str(user_pk)
    if len(key) <= 80 and _GROUP_SAFE.fullmatch(key):
        return f"chatomon.user.{key}"
    return (
        f"chatomon.user-sha256.{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()}"
    )


_GROUP_SAFE = re.compile(r"[A-Za-z0-9._-]+")


def owner_for(user: Any, session_key: str | None) -> Owner:
    """The conversation owner: the authenticated user, else the anonymous session.

    Raises:
        ValueError: For an anonymous user without a session key.
    """
    if is_authenticated(user):
        return Owner.user(user.pk)
    if not session_key:
        raise ValueError("an anonymous chat needs a session (add SessionMiddleware)")
    return Owner.session(session_key)


async def load_actor(owner: Owner) -> Any:
    """The asking actor of a turn resumed by someone else: the user, else AnonymousUser."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import AnonymousUser

    if owner.kind == "user":
        user = await get_user_model()._default_manager.filter(pk=owner.key).afirst()
        if user is not None:
            return user
    return AnonymousUser()


async def publish_event(event: Mapping[str, Any]) -> None:
    """Send one event of a resumed turn to its conversation's group.

    No layer, or a layer that fails (logged once per outage): dropped, and the turn goes on;
    its events are stored, so the conversation shows them when reloaded.
    """
    from channels.layers import get_channel_layer

    from chatomon.django.transports.layer import attempt

    layer = get_channel_layer()
    conversation_id = event.get("conversation_id")
    if layer is None or not conversation_id:
        return
    message = {"type": GROUP_EVENT_TYPE, "event": dict(event)}
    await attempt("publishing", layer.group_send(conversation_group(str(conversation_id)), message))


def _listeners(settings: ChatSettings) -> list[Any]:
    from django.apps import apps
    from django.utils.module_loading import import_string

    from chatomon.django.audit.listener import AuditListener
    from chatomon.django.audit.signals import send_activity

    listeners: list[Any] = [send_activity]
    if settings.audit.active:
        listeners.append(AuditListener(settings))
    if apps.is_installed("chatomon.console"):
        # Open consoles learn of new and decided confirmations at once, not at their
        # next once-a-second check.
        listeners.append(import_string("chatomon.console.live.approval_activity_listener"))
    return listeners


def build_chat_service(settings: ChatSettings | None = None) -> ChatService:
    """A ChatService wired from the validated settings (default: `chat_settings()`).

    DjangoStore, the configured provider, the chat tools over the manager registry, the
    atom's orbitals, the loop limits, the signal and audit listeners, the channel-layer
    publisher, the actor loader, and the owners' token budgets for resumed turns.
    """
    from chatomon.django.audit.rule import redaction_of
    from chatomon.django.persistence.store import DjangoStore
    from chatomon.django.transports.ratelimit import RateLimiter

    chosen = settings or chat_settings()
    planned_settings = get_planned_chat_settings()
    listeners = _listeners(chosen)
    redaction = redaction_of(chosen)
    return ChatService(
        store=DjangoStore(),
        provider=build_provider(chosen.provider, chosen.provider_config),
        toolset=Toolset(
            chosen.chat_registry(), chosen.tools, redaction=redaction, run_blocking=in_tool_worker
        ),
        atom_config=chosen.atom_config(),
        limits=chosen.limits,
        system_prompt=chosen.system_prompt,
        max_recent_messages=chosen.max_recent_messages,
        summarize_after=chosen.summarize_after,
        confirm_timeout_seconds=chosen.confirm_timeout_seconds,
        staff_approval_timeout_seconds=chosen.staff_approval_timeout_seconds,
        listeners=listeners,
        publisher=publish_event,
        actor_loader=load_actor,
        budget_for=lambda owner: RateLimiter(chat_settings()).owner_budget(owner),
        redaction=redaction,
        planned=PlannedTurns.from_settings(planned_settings) if planned_settings.enabled else None,
        audit=_planned_audit(listeners),
    )


def _planned_audit(listeners: list[Any]) -> AuditHook:
    """The sink of the planned audit events: the audit listener, as `planned` activities.

    The tools' own audit events are left out: the pipeline reports every tool call to
    the listeners already (`tool_called`).
    """
    from chatomon.django.audit.listener import AuditListener

    auditors = [listener for listener in listeners if isinstance(listener, AuditListener)]

    def record(kind: str, payload: Mapping[str, Any]) -> None:
        if not kind.startswith("planned_"):
            return
        fields = dict(payload)  # the service names the turn of every event it audits
        conversation, turn = fields.pop("conversation_id", ""), fields.pop("turn_id", "")
        activity = Activity("planned", conversation, turn, None, {"event": kind, **fields})
        for auditor in auditors:
            auditor(activity)

    return record


def chat_service() -> ChatService:
    """The process's service for the current settings, built on first use.

    Built once per settings object even when several threads ask at once (the first
    requests of a process, each on its own worker thread): a build may load a model of
    gigabytes, so the first caller builds under `_build_lock` and the others, checking
    again once they hold it, take its service (double-checked).
    """
    global _built  # noqa: PLW0603 - the process's one service, replaced when settings change
    if (known := _built_for(chat_settings())) is not None:
        return known
    with _build_lock:
        # Read again under the lock: first calls at once may each have validated their
        # own settings object (`chat_settings`' cache is filled by whichever finishes
        # first), so the object the first builder cached is the one to key on.
        settings = chat_settings()
        if (known := _built_for(settings)) is not None:  # built while we waited
            return known
        service = build_chat_service(settings)
        _built = (settings, service)
    return service


def _built_for(settings: ChatSettings) -> ChatService | None:
    """The service built for `settings` (this very object), if any."""
    built = _built
    return built[1] if built is not None and built[0] is settings else None


def available_service(settings: ChatSettings) -> ChatService | None:
    """The process's `ChatService` for `settings`, or None when it cannot be built.

    What every transport asks before a turn. A provider that cannot be built (a bad
    `provider_config`, a missing extra, a constructor that raises) makes every chat
    request fail alike: the problem is logged ONCE per process and settings object (a
    changed CHATOMON is logged again) and signalled on every request, which the transport
    answers in its own format (HTTP and SSE: `chat_error`, 500; a WebSocket closes with
    1011); the service is tried again on the next request (a provider that comes up is
    used at once).
    """
    try:
        return chat_service()
    except Exception as error:  # a misconfiguration: answered as chat_error
        send_chat_error("chat_error", GENERIC_ERROR_MESSAGE, exception=error)
        with _reported_lock:
            first = _reported.get(id(settings)) is not settings
            if first:
                _reported.clear()  # older settings are gone for good
                _reported[id(settings)] = settings
        if first:
            logger.error(
                "the chat service cannot be built from the CHATOMON settings (provider %r); "
                "every chat request answers chat_error until it is fixed",
                settings.provider,
                exc_info=error,
            )
        return None


_reported_lock = threading.Lock()
_reported: dict[int, ChatSettings] = {}
"""The settings whose broken service was logged already (by identity)."""
