# The models need a ready app registry, so each method imports them when it runs: importing
# this module must work before settings are configured.
# ruff: noqa: PLC0415
"""`DjangoStore`: the conversation store on the Django ORM.

Importing this module needs no settings: the models load on first use, once the app
registry is ready. A call runs one `chatomon.django.persistence.queries` function off the event loop
through asgiref's `sync_to_async`, after closing a connection of that thread that broke
(`chatomon.django.persistence.connections`), or, for a single-row read or insert, Django's async
ORM; `plan_turn_here` and `close_turn_here` run theirs on the calling thread, for sync
code (a view) where the ORM may run.

```python
from chatomon.django.persistence.store import DjangoStore

store = DjangoStore()
conversation = await store.create_conversation(Owner.session(request.session.session_key))
```
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from asgiref.sync import sync_to_async

from chatomon.chat.store.records import (
    Approver,
    Conversation,
    ConversationSummary,
    Decision,
    MessageItem,
    OpenedTurn,
    Owner,
    PendingConfirmation,
    PlannedTurn,
    StoredMessage,
    TurnRecord,
    TurnStatus,
    aware,
)
from chatomon.django.persistence.connections import drop_broken_connections
from chatomon.schemas import TokenUsage, TurnReport

__all__ = ["DjangoStore"]

T = TypeVar("T")

_OFF_LOOP: dict[Callable[..., Any], Callable[..., Awaitable[Any]]] = {}
"""Each `queries` function's thread-sensitive wrapper, built on its first call rather than on
every call (building one runs `functools.update_wrapper` and asgiref's inspection)."""


async def _run(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    wrapped = _OFF_LOOP.get(function)
    if wrapped is None:
        wrapped = _OFF_LOOP[function] = sync_to_async(
            _on_live_connections(function), thread_sensitive=True
        )
    return await wrapped(*args, **kwargs)  # type: ignore[no-any-return]


def _on_live_connections(function: Callable[..., T]) -> Callable[..., T]:
    """`function`, run after dropping the thread's broken database connections.

    A streamed turn's thread serves no request, whose start would otherwise do it (see
    `chatomon.django.persistence.connections`).
    """

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> T:
        drop_broken_connections()
        return function(*args, **kwargs)

    return call


class DjangoStore:
    """A `ConversationStore` on the chatomon app's models (add "chatomon.django")."""

    async def create_conversation(
        self, owner: Owner, *, title: str = "", now: datetime | None = None
    ) -> Conversation:
        """Start a new conversation of `owner`."""
        from chatomon.django import models
        from chatomon.django.persistence import rows

        moment = aware(now)
        row = await models.Conversation.objects.acreate(
            id=uuid.uuid4(), owner_kind=owner.kind, owner_key=owner.key, title=title,
            created_at=moment, updated_at=moment,
        )  # fmt: skip
        return rows.conversation_record(row)

    async def get_conversation(self, owner: Owner, conversation_id: UUID) -> Conversation | None:
        """The conversation, or None when unknown or not `owner`'s."""
        from chatomon.django import models
        from chatomon.django.persistence import rows

        row = await models.Conversation.objects.filter(
            pk=conversation_id, owner_kind=owner.kind, owner_key=owner.key
        ).afirst()
        return rows.conversation_record(row) if row is not None else None

    async def list_conversations(self, owner: Owner) -> list[Conversation]:
        """`owner`'s conversations, most recently updated first."""
        from chatomon.django import models
        from chatomon.django.persistence import rows

        mine = models.Conversation.objects.filter(owner_kind=owner.kind, owner_key=owner.key)
        return [rows.conversation_record(row) async for row in mine.order_by("-updated_at")]

    async def save_summary(
        self, owner: Owner, conversation_id: UUID, summary: ConversationSummary
    ) -> Conversation:
        """Store the context summary of the conversation."""
        from chatomon.django.persistence import queries, rows

        await _run(queries.save_summary, owner, conversation_id, summary)
        return rows.conversation_record(await _run(queries.owned, owner, conversation_id))

    async def append_messages(
        self,
        owner: Owner,
        conversation_id: UUID,
        items: Sequence[MessageItem],
        *,
        now: datetime | None = None,
    ) -> list[StoredMessage]:
        """Append items at the next positions, in order."""
        from chatomon.django.persistence import queries

        return await _run(queries.append_messages, owner, conversation_id, items, aware(now))

    async def messages(self, owner: Owner, conversation_id: UUID) -> list[StoredMessage]:
        """The conversation's items in position order."""
        from chatomon.django import models
        from chatomon.django.persistence import queries, rows

        conversation = await _run(queries.owned, owner, conversation_id)
        items = models.ChatMessage.objects.filter(conversation=conversation).order_by("position")
        return [rows.message_record(row) async for row in items]

    async def start_turn(
        self,
        owner: Owner,
        conversation_id: UUID,
        *,
        turn_id: str | None = None,
        now: datetime | None = None,
    ) -> TurnRecord:
        """Record a new running turn."""
        from chatomon.django import models
        from chatomon.django.persistence import queries, rows

        conversation = await _run(queries.owned, owner, conversation_id)
        turn_id = turn_id or uuid.uuid4().hex
        if await models.Turn.objects.filter(pk=turn_id).aexists():
            raise ValueError(f"turn {turn_id!r} already exists")
        row = await models.Turn.objects.acreate(
            id=turn_id, conversation=conversation, status="running", started_at=aware(now)
        )
        return rows.turn_record(row)

    async def open_turn(
        self, owner: Owner, conversation_id: UUID | None, *, now: datetime | None = None
    ) -> OpenedTurn | None:
        """Start a running turn (2 statements new, 3 existing; see `queries.open_turn`)."""
        from chatomon.django.persistence import queries

        return await _run(queries.open_turn, owner, conversation_id, aware(now))

    async def plan_turn(
        self, owner: Owner, conversation_id: UUID | None, *, now: datetime | None = None
    ) -> PlannedTurn | None:
        """`open_turn` without writing (no statement new, 2 reads existing)."""
        from chatomon.django.persistence import queries

        return await _run(queries.plan_turn, owner, conversation_id, aware(now))

    async def record_turn(self, planned: PlannedTurn) -> None:
        """Write a planned turn as running (and its conversation, when new)."""
        from chatomon.django.persistence import queries

        await _run(queries.record_turn, planned)

    async def close_turn(
        self,
        owner: Owner,
        conversation_id: UUID,
        turn_id: str,
        *,
        items: Sequence[MessageItem],
        status: TurnStatus,
        report: TurnReport | None = None,
        now: datetime | None = None,
        position: int | None = None,
        planned: PlannedTurn | None = None,
    ) -> None:
        """Append the last items and end the turn in one transaction (3 statements)."""
        from chatomon.django.persistence import queries

        await _run(
            queries.close_turn, owner, conversation_id, turn_id, items=items, status=status,
            report=report, now=aware(now), position=position, planned=planned,
        )  # fmt: skip

    def plan_turn_here(self, owner: Owner, conversation_id: UUID | None) -> PlannedTurn | None:
        """`plan_turn` on the calling thread, for sync code where the ORM may run."""
        from chatomon.django.persistence import queries

        return queries.plan_turn(owner, conversation_id, aware(None))

    def close_turn_here(
        self,
        owner: Owner,
        conversation_id: UUID,
        turn_id: str,
        *,
        items: Sequence[MessageItem],
        status: TurnStatus,
        report: TurnReport | None,
        position: int | None,
        planned: PlannedTurn | None = None,
    ) -> None:
        """`close_turn` on the calling thread (a `chatomon.chat.turn_ending.TurnCloser`)."""
        from chatomon.django.persistence import queries

        queries.close_turn(
            owner, conversation_id, turn_id, items=items, status=status, report=report,
            now=aware(None), position=position, planned=planned,
        )  # fmt: skip

    async def update_turn(
        self,
        turn_id: str,
        *,
        status: TurnStatus,
        report: TurnReport | None = None,
        usage: TokenUsage | None = None,
        now: datetime | None = None,
    ) -> TurnRecord:
        """Move the turn to `status` (validated)."""
        from chatomon.django.persistence import queries

        return await _run(queries.update_turn, turn_id, status, report, usage, aware(now))

    async def get_turn(self, turn_id: str) -> TurnRecord | None:
        """The turn, or None."""
        from chatomon.django import models
        from chatomon.django.persistence import rows

        row = await models.Turn.objects.filter(pk=turn_id).afirst()
        return rows.turn_record(row) if row is not None else None

    async def list_turns(
        self,
        *,
        conversation_id: UUID | None = None,
        status: TurnStatus | None = None,
        limit: int | None = None,
    ) -> list[TurnRecord]:
        """Turns matching every filter given, most recently started first."""
        from chatomon.django import models
        from chatomon.django.persistence import rows

        turns = models.Turn.objects.order_by("-started_at")
        if conversation_id is not None:
            turns = turns.filter(conversation_id=conversation_id)
        if status is not None:
            turns = turns.filter(status=status)
        if limit is not None:
            turns = turns[:limit]
        return [rows.turn_record(row) async for row in turns]

    async def create_confirmation(
        self,
        owner: Owner,
        conversation_id: UUID,
        *,
        turn_id: str,
        call_id: str,
        mutation: str,
        input: Mapping[str, Any],
        preview: Any,
        approver: Approver,
        expires_at: datetime,
        state: Mapping[str, Any],
        now: datetime | None = None,
    ) -> PendingConfirmation:
        """Record a pending confirmation."""
        from chatomon.django.persistence import queries

        return await _run(
            queries.create_confirmation, owner, conversation_id, turn_id=turn_id,
            call_id=call_id, mutation=mutation, input=dict(input), preview=preview,
            approver=approver, expires_at=aware(expires_at), state=dict(state),
            created_at=aware(now),
        )  # fmt: skip

    async def get_confirmation(
        self, confirmation_id: UUID, *, owner: Owner | None = None, now: datetime | None = None
    ) -> PendingConfirmation | None:
        """The confirmation as of `now`, or None."""
        from chatomon.django.persistence import queries, rows

        row = await queries.visible_confirmations(owner).filter(pk=confirmation_id).afirst()
        return rows.confirmation_record(row).as_of(aware(now)) if row is not None else None

    async def list_pending(
        self, approver: Approver | None = None, *, now: datetime | None = None
    ) -> list[PendingConfirmation]:
        """Pending, unexpired confirmations, oldest first."""
        from chatomon.django import models
        from chatomon.django.persistence import rows

        pending = models.PendingConfirmation.objects.filter(
            status="pending", expires_at__gt=aware(now)
        )
        if approver is not None:
            pending = pending.filter(approver=approver)
        return [rows.confirmation_record(row) async for row in pending.order_by("created_at")]

    async def claim(
        self,
        confirmation_id: UUID,
        *,
        decision: Decision,
        decided_by: str,
        reason: str | None = None,
        owner: Owner | None = None,
        now: datetime | None = None,
    ) -> PendingConfirmation | None:
        """Decide a pending, unexpired confirmation; None to every loser."""
        from chatomon.django.persistence import queries

        return await _run(
            queries.claim, confirmation_id, decision=decision, decided_by=decided_by,
            reason=reason, owner=owner, now=aware(now),
        )  # fmt: skip

    async def expire_due(
        self, now: datetime | None = None, *, confirmation_id: UUID | None = None
    ) -> list[PendingConfirmation]:
        """Mark pending confirmations past expiry as expired; returns them."""
        from chatomon.django.persistence import queries

        return await _run(queries.expire_due, aware(now), confirmation_id)

    async def prune(self, older_than: datetime) -> dict[str, int]:
        """Delete stale conversations (with their items) and old resolved confirmations."""
        from chatomon.django.persistence import queries

        return await _run(queries.prune, aware(older_than))
