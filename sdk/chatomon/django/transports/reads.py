# The models need a ready app registry: the queries import them when they run.
# ruff: noqa: PLC0415
"""Reads of the chat tables for the transports, off the loop: `read` runs one.

The chat history (`transports.history`) finds its conversation with `target_conversation`,
and the resumption (`transports.relay`) reads a turn's status through `read`. (The
`confirmation_pending` rule is not here: it lives in `ChatService.run_turn`, behind the
store's `pending_client_confirmation`.)

The reads run like the store's calls (`chatomon.django.persistence.store`): one sync
unit of work off the loop, on SQLite its one worker thread, connections released.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar
from uuid import UUID

from asgiref.sync import sync_to_async

from chatomon.chat.store.records import Owner
from chatomon.django.persistence.connections import released
from chatomon.django.persistence.store import SQLITE_WORKER
from chatomon.errors import StoreUnavailableError

__all__ = ["read", "target_conversation"]

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
    from chatomon.django.persistence.conversations import current_conversation, owners_conversation

    if conversation_id is not None:
        try:
            key = UUID(str(conversation_id))
        except ValueError:
            return None
        return owners_conversation(owner, key).first()
    if not latest:
        return None
    return current_conversation(owner)  # the rule the turn itself picks it by
