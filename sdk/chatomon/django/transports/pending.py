# The models need a ready app registry: the queries import them when they run.
# ruff: noqa: PLC0415
"""What a conversation waits on: its open client confirmation, read from the database.

A client confirmation belongs to the conversation, not to the socket that announced it:
while one is pending (undecided, unexpired) a new message in that conversation is refused
with `confirmation_pending`, from any socket, stream or request (`refusal`). A reloaded
page, a second tab or a plain HTTP client cannot slip a message past it. Staff approvals
do not block: the user cannot decide them. `new_conversation` is never refused.

The reads run like the store's calls (`chatomon.django.persistence.store`): one sync
unit of work off the loop, on SQLite its one worker thread, connections released.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar
from uuid import UUID

from asgiref.sync import sync_to_async

from chatomon.chat.pipeline.wire import error_event
from chatomon.chat.store.records import Owner, PendingConfirmation
from chatomon.django.persistence.connections import released
from chatomon.django.persistence.store import SQLITE_WORKER
from chatomon.errors import StoreUnavailableError

__all__ = [
    "PENDING_MESSAGE",
    "open_client_confirmation",
    "pending_refusal",
    "read",
    "target_conversation",
]

PENDING_MESSAGE = "Confirm or reject the pending change first."

P = ParamSpec("P")
T = TypeVar("T")

_on_workers = sync_to_async(released, thread_sensitive=False)
_on_sqlite = sync_to_async(released, thread_sensitive=False, executor=SQLITE_WORKER)


async def read(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args, **kwargs)`: a read of the chat tables, off the loop.

    Raises:
        StoreUnavailableError: The database could not be reached.
    """
    from django.db import InterfaceError, OperationalError, connections, router

    from chatomon.django.models import Conversation

    on_sqlite = connections[router.db_for_read(Conversation)].vendor == "sqlite"
    try:
        result: T = await (_on_sqlite if on_sqlite else _on_workers)(function, *args, **kwargs)
    except (OperationalError, InterfaceError) as error:
        raise StoreUnavailableError(f"the chat store's database is unavailable: {error}") from error
    return result


def target_conversation(owner: Owner, conversation_id: str | None, *, latest: bool) -> Any:
    """The conversation row a message goes to (sync): named, else the current one, or None.

    None for a new conversation, an unknown or foreign id, or an owner with none.
    """
    from chatomon.django.persistence.conversations import owners_conversation
    from chatomon.django.persistence.turns import current_conversation

    if conversation_id is not None:
        try:
            key = UUID(str(conversation_id))
        except ValueError:
            return None
        return owners_conversation(owner, key).first()
    if not latest:
        return None
    return current_conversation(owner)  # the rule the turn itself picks it by


def open_client_confirmation(
    owner: Owner, conversation_id: str | None, *, latest: bool, now: datetime | None = None
) -> PendingConfirmation | None:
    """The oldest pending, unexpired client confirmation of that conversation (sync)."""
    from chatomon.django.models import PendingConfirmation as Row
    from chatomon.django.persistence.rows import confirmation_record

    conversation = target_conversation(owner, conversation_id, latest=latest)
    if conversation is None:
        return None
    row = (
        Row.objects.filter(
            conversation=conversation,
            approver="client",
            status="pending",
            expires_at__gt=now or datetime.now(UTC),
        )
        .order_by("created_at")
        .first()
    )
    return None if row is None else confirmation_record(row)


async def pending_refusal(
    owner: Owner, conversation_id: str | None, *, new_conversation: bool
) -> dict[str, Any] | None:
    """The `confirmation_pending` refusal of a message to a conversation that waits, or None.

    Raises:
        StoreUnavailableError: The database could not be reached.
    """
    if new_conversation:
        return None
    found = await read(open_client_confirmation, owner, conversation_id, latest=True)
    if found is None:
        return None
    return error_event(
        "confirmation_pending",
        PENDING_MESSAGE,
        confirmation_id=str(found.id),
        conversation_id=str(found.conversation_id),
    )
