"""`ConversationStore`: what the chat service needs from persistence, transport-neutral."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable
from uuid import UUID

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
)
from chatomon.schemas import TokenUsage, TurnReport

__all__ = ["ConversationStore"]


@runtime_checkable
class ConversationStore(Protocol):
    """Conversations, their messages, turns and pending confirmations.

    Every conversation-scoped method takes the acting `Owner`; a conversation of another
    owner behaves exactly like an unknown one (None, or ConversationNotFoundError).
    Timestamps are aware UTC datetimes; `now` parameters exist for tests and clocks.
    """

    async def create_conversation(
        self, owner: Owner, *, title: str = "", now: datetime | None = None
    ) -> Conversation:
        """Start a new conversation of `owner`."""
        ...

    async def get_conversation(self, owner: Owner, conversation_id: UUID) -> Conversation | None:
        """The conversation, or None when unknown or not `owner`'s."""
        ...

    async def list_conversations(self, owner: Owner) -> list[Conversation]:
        """`owner`'s conversations, most recently updated first."""
        ...

    async def save_summary(
        self, owner: Owner, conversation_id: UUID, summary: ConversationSummary
    ) -> Conversation:
        """Store the context summary of the conversation (replacing the previous one)."""
        ...

    async def append_messages(
        self,
        owner: Owner,
        conversation_id: UUID,
        items: Sequence[MessageItem],
        *,
        now: datetime | None = None,
    ) -> list[StoredMessage]:
        """Append items at the next positions, in order; returns them as stored."""
        ...

    async def messages(self, owner: Owner, conversation_id: UUID) -> list[StoredMessage]:
        """The conversation's items in position order."""
        ...

    async def start_turn(
        self,
        owner: Owner,
        conversation_id: UUID,
        *,
        turn_id: str | None = None,
        now: datetime | None = None,
    ) -> TurnRecord:
        """Record a new running turn (`turn_id` defaults to a fresh UUID hex)."""
        ...

    async def update_turn(
        self,
        turn_id: str,
        *,
        status: TurnStatus,
        report: TurnReport | None = None,
        usage: TokenUsage | None = None,
        now: datetime | None = None,
    ) -> TurnRecord:
        """Move the turn to `status` (validated); a report sets final_action, escalated, usage.

        Raises:
            TurnTransitionError: The move is not allowed from the current status.
            LookupError: No such turn.
        """
        ...

    async def open_turn(
        self,
        owner: Owner,
        conversation_id: UUID | None,
        *,
        latest: bool = False,
        now: datetime | None = None,
    ) -> OpenedTurn | None:
        """Start a running turn in one unit of work: the conversation, its items, the turn.

        `conversation_id=None` starts a new conversation, or with `latest` continues the
        owner's current one: where the owner's latest turn started (a new one when the
        owner has none). Returns
        None when the named conversation is unknown or not `owner`'s (nothing is written
        then).
        """
        ...

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
        """Append the turn's last items and move it to `status`, in one unit of work.

        `position` is where the items are expected to start (the conversation's length
        when the turn opened), a hint that lets a store skip reading it; the items go at
        the real end of the conversation either way.

        Raises:
            TurnTransitionError: The move is not allowed from the current status (the
                items are not stored then).
            ConversationNotFoundError: The conversation is not `owner`'s.
        """
        ...

    async def get_turn(self, turn_id: str) -> TurnRecord | None:
        """The turn, or None."""
        ...

    async def list_turns(
        self,
        *,
        conversation_id: UUID | None = None,
        status: TurnStatus | None = None,
        limit: int | None = None,
    ) -> list[TurnRecord]:
        """Turns matching every filter given, most recently started first."""
        ...

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
        """Suspend a running turn on a confirmation, as one unit of work.

        Appends `items` (those not stored yet) at the conversation's end, records
        `confirmation` as pending (with the serialized turn state to resume from) and moves
        the turn to `awaiting_confirmation`: all of it, or (on any error) none of it. The
        only way a confirmation is recorded: one waits on a turn that waits on it.
        `position` is where the items are expected to start, a hint as in `close_turn`.

        Raises:
            TurnTransitionError: The turn is not running.
            ConversationNotFoundError: The conversation is not the owner's.
            LookupError: No such turn.
            ValueError: An approver other than "client" or "staff".
        """
        ...

    async def get_confirmation(
        self, confirmation_id: UUID, *, owner: Owner | None = None, now: datetime | None = None
    ) -> PendingConfirmation | None:
        """The confirmation as of `now` (pending past expiry reads as expired), or None.

        With `owner`, only a confirmation of that owner's conversation is returned.
        """
        ...

    async def list_pending(
        self, approver: Approver | None = None, *, now: datetime | None = None
    ) -> list[PendingConfirmation]:
        """Pending, unexpired confirmations (of one approver kind), oldest first."""
        ...

    async def pending_client_confirmation(
        self,
        owner: Owner,
        conversation_id: UUID | None,
        *,
        latest: bool = False,
        now: datetime | None = None,
    ) -> PendingConfirmation | None:
        """The oldest pending, unexpired client confirmation of the conversation a message goes to.

        The conversation is the one `open_turn` would continue: `conversation_id`, or with
        `latest` the owner's current one. None when nothing waits there, or the conversation
        is unknown or not `owner`'s. Staff approvals never count: the user cannot decide them.
        """
        ...

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
        """Decide a pending, unexpired confirmation in one atomic conditional update.

        Returns the decided record to the one winner; None to everyone else (already
        decided, expired, unknown, or with `owner`, not that owner's).
        """
        ...

    async def expire_due(
        self, now: datetime | None = None, *, confirmation_id: UUID | None = None
    ) -> list[PendingConfirmation]:
        """Mark pending confirmations past expiry as expired; returns those this call expired.

        With `confirmation_id`, only that confirmation (when it is overdue).
        """
        ...

    async def prune(self, older_than: datetime) -> dict[str, int]:
        """Delete stale data; returns counts per kind.

        Conversations last updated before `older_than` go with their messages, turns and
        confirmations; so do confirmations decided, or expired, before `older_than`.
        Keys: "conversations", "messages", "turns", "confirmations".
        """
        ...
