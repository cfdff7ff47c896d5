# The models need a ready app registry, so each method imports its queries module when it
# runs: importing this module must work before settings are configured.
# ruff: noqa: PLC0415
"""`DjangoStore`: the conversation store on the Django ORM.

Importing this module needs no settings: the models load on first use, once the app
registry is ready. A database that cannot be reached raises `StoreUnavailableError`.
Every method runs one sync function of the ORM (from
`chatomon.django.persistence.conversations`, `.turns` or `.confirmations`: one statement,
or several in `transaction.atomic()`) through `_run`: off the event loop on a worker
thread of the loop's executor (`sync_to_async(thread_sensitive=False)`; on SQLite, which
writes one at a time, always the one thread `SQLITE_WORKER`), between the
connection releases Django does at a request's edges
(`chatomon.django.persistence.connections.released`). So a turn waiting on its model holds
no database connection (with `CONN_MAX_AGE = 0`; with PostgreSQL's connection pool,
`"OPTIONS": {"pool": True}`, the connection goes back to the pool), and a connection that
broke is replaced by the next call.

Why not the request's thread (thread-sensitive mode): under Django's `ASGIHandler` each
request gets a thread of its own that ends with it, so every request would open a new
connection (on SQLite, whose connections are kept, a reconnection and a WAL checkpoint per
request). Each call is a whole unit of work, so it needs no thread shared with the caller;
it never joins a transaction the caller holds.

```python
from chatomon.django.persistence.store import DjangoStore

store = DjangoStore()
owner, _ = identify(request.user, request.session, request.META.get("REMOTE_ADDR"))
conversation = await store.create_conversation(owner)
```
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import ParamSpec, TypeVar
from uuid import UUID, uuid4

from asgiref.sync import sync_to_async

from chatomon.chat.store.records import (
    Approver,
    Conversation,
    ConversationSummary,
    Decision,
    MessageItem,
    NewConfirmation,
    OpenedTurn,
    Owner,
    PendingConfirmation,
    StoredMessage,
    TurnRecord,
    TurnStatus,
    aware,
)
from chatomon.django.persistence.connections import released
from chatomon.errors import StoreUnavailableError
from chatomon.schemas import TokenUsage, TurnReport

__all__ = ["SQLITE_WORKER", "DjangoStore"]

P = ParamSpec("P")
T = TypeVar("T")

SQLITE_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chatomon-sqlite")
"""The one thread of every SQLite store call in the process: SQLite writes one at a time
whatever the threads (concurrent writers would wait on its lock, or fail on an in-memory
database's), and the thread keeps its connection between calls."""

# Built once each: building one per call would run asgiref's inspection every time.
_on_the_loops_workers = sync_to_async(released, thread_sensitive=False)
_on_the_sqlite_worker = sync_to_async(released, thread_sensitive=False, executor=SQLITE_WORKER)


async def _run(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args, **kwargs)`: a store unit of work, off the loop, connections released.

    Raises:
        StoreUnavailableError: The database could not be reached (Django's
            `OperationalError` or `InterfaceError`, kept as the cause): the pipeline tells
            the client to try again later instead of failing as if chatomon were broken.
    """
    from django.db import InterfaceError, OperationalError, connections, router

    from chatomon.django.models import Conversation

    on_sqlite = connections[router.db_for_write(Conversation)].vendor == "sqlite"
    run = _on_the_sqlite_worker if on_sqlite else _on_the_loops_workers
    try:
        result: T = await run(function, *args, **kwargs)
    except (OperationalError, InterfaceError) as error:
        raise StoreUnavailableError(f"the chat store's database is unavailable: {error}") from error
    return result


class DjangoStore:
    """A `ConversationStore` on the chatomon app's models (add "chatomon.django")."""

    async def create_conversation(
        self, owner: Owner, *, title: str = "", now: datetime | None = None
    ) -> Conversation:
        """Start a new conversation of `owner`."""
        from chatomon.django.persistence import conversations

        return await _run(conversations.create_conversation, owner, title, aware(now))

    async def get_conversation(self, owner: Owner, conversation_id: UUID) -> Conversation | None:
        """The conversation, or None when unknown or not `owner`'s."""
        from chatomon.django.persistence import conversations

        return await _run(conversations.get_conversation, owner, conversation_id)

    async def list_conversations(self, owner: Owner) -> list[Conversation]:
        """`owner`'s conversations, most recently updated first."""
        from chatomon.django.persistence import conversations

        return await _run(conversations.list_conversations, owner)

    async def save_summary(
        self, owner: Owner, conversation_id: UUID, summary: ConversationSummary
    ) -> Conversation:
        """Store the context summary of the conversation."""
        from chatomon.django.persistence import conversations

        return await _run(conversations.save_summary, owner, conversation_id, summary)

    async def append_messages(
        self,
        owner: Owner,
        conversation_id: UUID,
        items: Sequence[MessageItem],
        *,
        now: datetime | None = None,
    ) -> list[StoredMessage]:
        """Append items at the next positions, in order."""
        from chatomon.django.persistence import conversations

        return await _run(conversations.append_messages, owner, conversation_id, items, aware(now))

    async def messages(self, owner: Owner, conversation_id: UUID) -> list[StoredMessage]:
        """The conversation's items in position order."""
        from chatomon.django.persistence import conversations

        return await _run(conversations.messages, owner, conversation_id)

    async def start_turn(
        self,
        owner: Owner,
        conversation_id: UUID,
        *,
        turn_id: str | None = None,
        now: datetime | None = None,
    ) -> TurnRecord:
        """Record a new running turn."""
        from chatomon.django.persistence import turns

        turn_id = turn_id or uuid4().hex
        return await _run(turns.start_turn, owner, conversation_id, turn_id, aware(now))

    async def open_turn(
        self,
        owner: Owner,
        conversation_id: UUID | None,
        *,
        latest: bool = False,
        now: datetime | None = None,
    ) -> OpenedTurn | None:
        """Start a running turn (2 statements new, 3 existing; see `turns.open_turn`)."""
        from chatomon.django.persistence import turns

        return await _run(turns.open_turn, owner, conversation_id, aware(now), latest=latest)

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
    ) -> None:
        """Append the last items and end the turn in one transaction (see `turns.close_turn`)."""
        from chatomon.django.persistence import turns

        await _run(
            turns.close_turn, owner, conversation_id, turn_id, items=items, status=status,
            report=report, now=aware(now), position=position,
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
        from chatomon.django.persistence import turns

        return await _run(turns.update_turn, turn_id, status, report, usage, aware(now))

    async def get_turn(self, turn_id: str) -> TurnRecord | None:
        """The turn, or None."""
        from chatomon.django.persistence import turns

        return await _run(turns.get_turn, turn_id)

    async def list_turns(
        self,
        *,
        conversation_id: UUID | None = None,
        status: TurnStatus | None = None,
        limit: int | None = None,
    ) -> list[TurnRecord]:
        """Turns matching every filter given, most recently started first."""
        from chatomon.django.persistence import turns

        return await _run(turns.list_turns, conversation_id, status, limit)

    async def suspend_turn(
        self,
        owner: Owner,
        conversation_id: UUID,
        turn_id: str,
        *,
        items: Sequence[MessageItem],
        confirmation: NewConfirmation,
        now: datetime | None = None,
        position: int | None = None,
    ) -> PendingConfirmation:
        """Suspend the turn in one transaction (see `turns.suspend_turn`)."""
        from chatomon.django.persistence import turns

        return await _run(
            turns.suspend_turn, owner, conversation_id, turn_id,
            items=items, confirmation=confirmation, now=aware(now), position=position,
        )  # fmt: skip

    async def get_confirmation(
        self, confirmation_id: UUID, *, owner: Owner | None = None, now: datetime | None = None
    ) -> PendingConfirmation | None:
        """The confirmation as of `now`, or None."""
        from chatomon.django.persistence import confirmations

        return await _run(confirmations.get_confirmation, confirmation_id, owner, aware(now))

    async def list_pending(
        self, approver: Approver | None = None, *, now: datetime | None = None
    ) -> list[PendingConfirmation]:
        """Pending, unexpired confirmations, oldest first."""
        from chatomon.django.persistence import confirmations

        return await _run(confirmations.list_pending, approver, aware(now))

    async def pending_client_confirmation(
        self,
        owner: Owner,
        conversation_id: UUID | None,
        *,
        latest: bool = False,
        now: datetime | None = None,
    ) -> PendingConfirmation | None:
        """The oldest pending, unexpired client confirmation of that conversation (1 statement)."""
        from chatomon.django.persistence import confirmations

        return await _run(
            confirmations.pending_client_confirmation, owner, conversation_id, latest, aware(now)
        )

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
        from chatomon.django.persistence import confirmations

        return await _run(
            confirmations.claim, confirmation_id, decision=decision, decided_by=decided_by,
            reason=reason, owner=owner, now=aware(now),
        )  # fmt: skip

    async def expire_due(
        self, now: datetime | None = None, *, confirmation_id: UUID | None = None
    ) -> list[PendingConfirmation]:
        """Mark pending confirmations past expiry as expired; returns them."""
        from chatomon.django.persistence import confirmations

        return await _run(confirmations.expire_due, aware(now), confirmation_id)

    async def prune(self, older_than: datetime) -> dict[str, int]:
        """Delete stale conversations (with their items) and old resolved confirmations."""
        from chatomon.django.persistence import conversations

        return await _run(conversations.prune, aware(older_than))
