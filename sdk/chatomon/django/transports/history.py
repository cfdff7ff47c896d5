# The models need a ready app registry: the queries import them when they run.
# ruff: noqa: PLC0415
"""`GET chat/history/`: the owner's conversation as the chat widget shows it after a reload.

`?conversation_id=<id>` names the conversation; without it, the owner's current one
(where the owner's latest turn started, the one a message without an id continues).
Owner-scoped as every chat route: an unknown or another owner's id answers 404
`conversation_not_found`, an anonymous visitor without a chat identity yet has no history
(an empty one, and no session is created for it). The `permission` setting applies (403).

```json
{"conversation_id": "…", "max_message_chars": 8000, "running_turn_id": null,
 "pending": {"type": "confirm_mutation", "id": "…", …} ,
 "items": [
   {"type": "user", "content": "Add a bolt", "blocked": false},
   {"type": "tool", "id": "call-1", "name": "query", "args": {…}, "result": {…}},
   {"type": "confirmation", "id": "…", "mutation": "createPart", "preview": …,
    "approver": "client", "status": "approved", "decided_by": "you", "decided_at": "…"},
   {"type": "assistant", "content": "Done."}]}
```

Items come in the order they happened (a confirmation where it was decided).
`pending` is the open client or staff confirmation, as its `confirm_mutation` event: the
widget shows its buttons again, and a decision made while the user was away is a
confirmation item with its status. Tool arguments, results, inputs and previews pass the
redaction rule, as the live events do, and each confirmation carries its `preview_table`
(chatomon.preview) as its live event does. A client's own decision reads
`decided_by: "you"` (the owner's key is not for the page); a staff decision
"a staff member" (the staff member's username is for the console only).

While the conversation's latest turn still runs (its client went away: a reload, a dropped
connection; see `chatomon.django.transports.relay`), `running_turn_id` names it: a client
follows it with `GET chat/stream/resume/?turn_id=…` or the WebSocket message
`{"type": "resume", "turn_id": …, "after": …}`, passing the last position it saw
(`Last-Event-ID` or `after`; 0 from its first event).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from asgiref.sync import sync_to_async
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.views import View

from chatomon.chat.pipeline.wire import (
    confirmation_event,
    decider_label,
    error_event,
    store_unavailable_event,
)
from chatomon.chat.store.records import Owner, PendingConfirmation, StoredMessage
from chatomon.django.audit.rule import redaction_of
from chatomon.django.persistence.connections import released
from chatomon.django.service import owner_for
from chatomon.django.settings import ChatSettings, chat_settings
from chatomon.django.transports.admission import (
    denied_event,
    existing_chat_identity,
    permitted,
)
from chatomon.django.transports.embedding import embeddable
from chatomon.django.transports.http import while_enabled
from chatomon.django.transports.reads import read, target_conversation
from chatomon.errors import StoreUnavailableError
from chatomon.redaction import Redaction

__all__ = [
    "ChatHistoryView",
    "Snapshot",
    "history_items",
    "request_owner",
    "snapshot",
]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What is stored of one conversation: its items, confirmations and running turn."""

    conversation_id: UUID
    messages: list[StoredMessage]
    confirmations: list[PendingConfirmation]
    running_turn_id: str | None


def snapshot(owner: Owner, conversation_id: str | None) -> Snapshot | None:
    """The conversation's stored state (sync); None when there is no such conversation."""
    from chatomon.django import models
    from chatomon.django.persistence.conversations import items_of
    from chatomon.django.persistence.rows import confirmation_record

    conversation = target_conversation(owner, conversation_id, latest=True)
    if conversation is None:
        return None
    confirmations = models.PendingConfirmation.objects.filter(conversation=conversation)
    running = (
        models.Turn.objects.filter(conversation=conversation, status="running")
        .order_by("-started_at")
        .values_list("id", flat=True)
        .first()
    )
    return Snapshot(
        conversation.pk,
        items_of(conversation.pk),
        [confirmation_record(row) for row in confirmations.order_by("created_at")],
        running,
    )


def history_items(
    found: Snapshot, redaction: Redaction, now: datetime | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The widget's items in order, and the open confirmation's event (or None)."""
    moment = now or datetime.now(UTC)
    items: list[tuple[datetime, int, dict[str, Any]]] = []
    tools: dict[str, dict[str, Any]] = {}
    for stored in found.messages:
        item = stored.item
        if item.kind in ("user", "assistant"):
            entry: dict[str, Any] = {"type": item.kind, "content": item.content}
            if item.blocked:
                entry["blocked"] = True
            items.append((stored.created_at, 0, entry))
        elif item.kind == "tool_calls":
            for call in item.tool_calls:
                tool = {"type": "tool", "id": call.id, "name": call.name}
                tool["args"] = redaction.value(dict(call.arguments))
                tools[call.id] = tool
                items.append((stored.created_at, 0, tool))
        elif item.call_id is not None and item.call_id in tools:
            tools[item.call_id]["result"] = redaction.value(item.result)
    pending = None
    for confirmation in (c.as_of(moment) for c in found.confirmations):
        shown = confirmation_event(confirmation, confirmation.preview, redaction)
        shown["turn_id"] = confirmation.turn_id  # as the pipeline sends it with its turn
        event = _decided(confirmation, shown)
        if confirmation.status == "pending":
            pending = shown
        # After what its turn stored when it paused (just after the confirmation itself),
        # before what the resumed turn stored (after the decision).
        at = confirmation.decided_at or min(confirmation.expires_at, moment)
        items.append((at, 1, {**event, "type": "confirmation"}))
    items.sort(key=lambda entry: (entry[0], entry[1]))  # stable: stored order kept
    return [entry for _, _, entry in items], pending


def _decided(confirmation: PendingConfirmation, event: dict[str, Any]) -> dict[str, Any]:
    decided_by = decider_label(confirmation)  # no username or owner key reaches the page
    at = confirmation.decided_at
    if confirmation.status == "expired" and at is None:
        at = confirmation.expires_at
    return {
        **event,
        "status": confirmation.status,
        "decided_by": decided_by,
        "decided_at": at.isoformat() if at is not None else None,
        "reason": confirmation.reason,
    }


def request_owner(request: HttpRequest, settings: ChatSettings) -> Owner | HttpResponse | None:
    """Permission, then the owner (sync): None for an anonymous visitor with no chat yet."""
    user = request.user
    if not permitted(settings, user, {"type": "http", "path": request.path}):
        return JsonResponse(denied_event(), status=403)
    if user.is_authenticated:
        return owner_for(user, None)
    identity = existing_chat_identity(getattr(request, "session", None))
    return None if identity is None else owner_for(user, identity)


class ChatHistoryView(View):
    """`GET chat/history/`: the conversation's items and open confirmation (module docstring)."""

    http_method_names = ("get",)

    @classmethod
    def as_view(cls, **initkwargs: Any) -> Any:
        """The view, gated by `enabled`, answering embedding pages (CORS, visitor tokens).

        Left out of ATOMIC_REQUESTS, as every chat view is: Django refuses an async view
        inside a request transaction.
        """
        view = super().as_view(**initkwargs)
        return transaction.non_atomic_requests(while_enabled(embeddable(view, view, _refuse)))

    async def get(self, request: HttpRequest) -> HttpResponseBase:
        """Answer the owner's conversation (never cached: it is private and changes)."""
        response = await self._answer(request)
        response["Cache-Control"] = "no-store"
        return response

    async def _answer(self, request: HttpRequest) -> HttpResponse:
        settings = chat_settings()
        owner = await sync_to_async(released)(request_owner, request, settings)
        if isinstance(owner, HttpResponse):
            return owner
        limit = {"max_message_chars": settings.max_message_chars}
        wanted = request.GET.get("conversation_id") or None
        try:
            found = None if owner is None else await read(snapshot, owner, wanted)
        except StoreUnavailableError:
            return JsonResponse(store_unavailable_event(), status=503)
        if found is None:
            if wanted is not None:
                missing = error_event("conversation_not_found", "This conversation does not exist.")
                return JsonResponse({**missing, **limit}, status=404)
            empty: dict[str, Any] = {"conversation_id": None, "items": [], "pending": None}
            return JsonResponse({**empty, "running_turn_id": None, **limit})
        items, pending = history_items(found, redaction_of(settings))
        body = {
            "conversation_id": str(found.conversation_id),
            "items": items,
            "pending": pending,
            "running_turn_id": found.running_turn_id,
            **limit,
        }
        return JsonResponse(body)


def _refuse(request: HttpRequest, status: int, event: dict[str, Any]) -> HttpResponse:
    return JsonResponse(event, status=status)
