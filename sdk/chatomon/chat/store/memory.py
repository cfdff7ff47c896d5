"""`MemoryStore`: the conversation store in process memory, for notebooks and tests.

A lock guards every operation, so a claim is atomic even when several threads (each with
its own event loop) share one store.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import threading
import uuid
from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from chatomon.chat.store.records import (
    TIMED_OUT_REASON,
    Approver,
    Conversation,
    ConversationNotFoundError,
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
    check_decision,
    check_transition,
    turn_changes,
)
from chatomon.schemas import TokenUsage, TurnReport

__all__ = ["MemoryStore"]


class MemoryStore:
    """A `ConversationStore` that keeps everything in dictionaries; nothing survives it.

    Examples:
        >>> import asyncio
        >>> store = MemoryStore()
        >>> conversation = asyncio.run(store.create_conversation(Owner.user(1)))
        >>> asyncio.run(store.get_conversation(Owner.user(2), conversation.id)) is None
        True
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conversations: dict[UUID, Conversation] = {}
        self._messages: dict[UUID, list[StoredMessage]] = {}
        self._turns: dict[str, TurnRecord] = {}
        self._confirmations: dict[UUID, PendingConfirmation] = {}
        self._message_ids = itertools.count(1)

    def _owned(self, owner: Owner, conversation_id: UUID) -> Conversation:
        conversation = self._conversations.get(conversation_id)
        if conversation is None or conversation.owner != owner:
            raise ConversationNotFoundError(f"no conversation {conversation_id} for this owner")
        return conversation

    async def create_conversation(
        self, owner: Owner, *, title: str = "", now: datetime | None = None
    ) -> Conversation:
        """Start a new conversation of `owner`."""
        moment = aware(now)
        conversation = Conversation(uuid.uuid4(), owner, title, moment, moment)
        with self._lock:
            self._conversations[conversation.id] = conversation
            self._messages[conversation.id] = []
        return conversation

    async def get_conversation(self, owner: Owner, conversation_id: UUID) -> Conversation | None:
        """The conversation, or None when unknown or not `owner`'s."""
        conversation = self._conversations.get(conversation_id)
        return conversation if conversation is not None and conversation.owner == owner else None

    async def list_conversations(self, owner: Owner) -> list[Conversation]:
        """`owner`'s conversations, most recently updated first."""
        with self._lock:
            mine = [c for c in self._conversations.values() if c.owner == owner]
        return sorted(mine, key=lambda c: c.updated_at, reverse=True)

    async def save_summary(
        self, owner: Owner, conversation_id: UUID, summary: ConversationSummary
    ) -> Conversation:
        """Store the context summary of the conversation."""
        with self._lock:
            updated = dataclasses.replace(self._owned(owner, conversation_id), summary=summary)
            self._conversations[conversation_id] = updated
        return updated

    async def append_messages(
        self,
        owner: Owner,
        conversation_id: UUID,
        items: Sequence[MessageItem],
        *,
        now: datetime | None = None,
    ) -> list[StoredMessage]:
        """Append items at the next positions, in order."""
        moment = aware(now)
        with self._lock:
            return self._append_locked(self._owned(owner, conversation_id), items, moment)

    def _append_locked(
        self, conversation: Conversation, items: Sequence[MessageItem], moment: datetime
    ) -> list[StoredMessage]:
        """Store copies of `items` at the conversation's end and touch it (lock held).

        Every copy is made before anything is stored: an item that cannot be copied
        stores nothing, so a unit of work that appends before its last step stays whole.
        """
        copies = [copy.deepcopy(item) for item in items]
        stored = self._messages[conversation.id]
        new = [
            StoredMessage(next(self._message_ids), conversation.id, len(stored) + i, moment, item)
            for i, item in enumerate(copies)
        ]
        stored.extend(new)
        self._conversations[conversation.id] = dataclasses.replace(conversation, updated_at=moment)
        return new

    async def messages(self, owner: Owner, conversation_id: UUID) -> list[StoredMessage]:
        """The conversation's items in position order."""
        with self._lock:
            self._owned(owner, conversation_id)
            return list(self._messages[conversation_id])

    async def start_turn(
        self,
        owner: Owner,
        conversation_id: UUID,
        *,
        turn_id: str | None = None,
        now: datetime | None = None,
    ) -> TurnRecord:
        """Record a new running turn."""
        turn = TurnRecord(turn_id or uuid.uuid4().hex, conversation_id, "running", aware(now))
        with self._lock:
            self._owned(owner, conversation_id)
            if turn.id in self._turns:
                raise ValueError(f"turn {turn.id!r} already exists")
            self._turns[turn.id] = turn
        return turn

    def _current(self, owner: Owner) -> UUID | None:
        """The conversation where `owner`'s latest turn started (see the protocol)."""
        with self._lock:
            mine = {c.id: c for c in self._conversations.values() if c.owner == owner}
            started = [t for t in self._turns.values() if t.conversation_id in mine]
        if started:
            return max(started, key=lambda turn: turn.started_at).conversation_id
        return max(mine.values(), key=lambda c: c.created_at).id if mine else None

    async def open_turn(
        self,
        owner: Owner,
        conversation_id: UUID | None,
        *,
        latest: bool = False,
        now: datetime | None = None,
    ) -> OpenedTurn | None:
        """Start a running turn: the conversation (see the protocol), its items, the turn."""
        moment = aware(now)
        if conversation_id is None and latest:
            conversation_id = self._current(owner)
        if conversation_id is None:
            conversation = await self.create_conversation(owner, now=moment)
        else:
            found = await self.get_conversation(owner, conversation_id)
            if found is None:
                return None
            conversation = found
        with self._lock:
            messages = list(self._messages[conversation.id])
        turn = await self.start_turn(owner, conversation.id, now=moment)
        return OpenedTurn(conversation, messages, turn)

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
        """Append the turn's last items and move it to `status` (`position` is only a hint).

        One unit of work under the lock: checked first, then stored whole.
        """
        moment = aware(now)
        with self._lock:
            conversation = self._owned(owner, conversation_id)
            moved = self._moved_locked(turn_id, status, report, None, moment)
            if items:
                self._append_locked(conversation, items, moment)
            self._turns[turn_id] = moved

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
        moment = aware(now)
        with self._lock:
            self._turns[turn_id] = updated = self._moved_locked(
                turn_id, status, report, usage, moment
            )
        return updated

    def _moved_locked(
        self,
        turn_id: str,
        status: TurnStatus,
        report: TurnReport | None,
        usage: TokenUsage | None,
        moment: datetime,
    ) -> TurnRecord:
        """The turn moved to `status`, checked but not stored yet (lock held)."""
        turn = self._turns.get(turn_id)
        if turn is None:
            raise LookupError(f"no turn {turn_id!r}")
        check_transition(turn_id, turn.status, status)
        return dataclasses.replace(turn, **turn_changes(status, report, usage, moment))

    async def get_turn(self, turn_id: str) -> TurnRecord | None:
        """The turn, or None."""
        return self._turns.get(turn_id)

    async def list_turns(
        self,
        *,
        conversation_id: UUID | None = None,
        status: TurnStatus | None = None,
        limit: int | None = None,
    ) -> list[TurnRecord]:
        """Turns matching every filter given, most recently started first."""
        with self._lock:
            turns = [
                t
                for t in self._turns.values()
                if (conversation_id is None or t.conversation_id == conversation_id)
                and (status is None or t.status == status)
            ]
        turns.sort(key=lambda t: t.started_at, reverse=True)
        return turns[:limit] if limit is not None else turns

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
        """Append the items, record the confirmation and move the turn: all or none.

        `position` is only a hint (the items go at the end, under the lock).

        One unit of work under the lock, so a concurrent move of the turn (an abort)
        either comes first and refuses it, or after it: never between the check and the
        writes, which would leave a pending confirmation on a turn that is not waiting.
        Everything that may fail (the checks, the copies) runs before the first write.
        """
        moment = aware(now)
        with self._lock:
            conversation = self._owned(owner, conversation_id)
            moved = self._moved_locked(turn_id, "awaiting_confirmation", None, None, moment)
            # Copies, so that the caller's later changes never reach the stored record.
            pending = PendingConfirmation(
                uuid.uuid4(), conversation_id, turn_id, confirmation.call_id,
                confirmation.mutation, copy.deepcopy(dict(confirmation.input)),
                copy.deepcopy(confirmation.preview), confirmation.approver, "pending", moment,
                aware(confirmation.expires_at), copy.deepcopy(dict(confirmation.state)),
            )  # fmt: skip
            if items:
                self._append_locked(conversation, items, moment)  # stores nothing if it fails
            self._confirmations[pending.id] = pending
            self._turns[turn_id] = moved
        return pending

    def _visible(self, confirmation_id: UUID, owner: Owner | None) -> PendingConfirmation | None:
        confirmation = self._confirmations.get(confirmation_id)
        if confirmation is None or owner is None:
            return confirmation
        conversation = self._conversations.get(confirmation.conversation_id)
        return confirmation if conversation is not None and conversation.owner == owner else None

    async def get_confirmation(
        self, confirmation_id: UUID, *, owner: Owner | None = None, now: datetime | None = None
    ) -> PendingConfirmation | None:
        """The confirmation as of `now`, or None."""
        confirmation = self._visible(confirmation_id, owner)
        return confirmation.as_of(aware(now)) if confirmation is not None else None

    async def list_pending(
        self, approver: Approver | None = None, *, now: datetime | None = None
    ) -> list[PendingConfirmation]:
        """Pending, unexpired confirmations, oldest first."""
        moment = aware(now)
        with self._lock:
            pending = [
                c
                for c in self._confirmations.values()
                if c.as_of(moment).status == "pending" and approver in (None, c.approver)
            ]
        return sorted(pending, key=lambda c: c.created_at)

    async def pending_client_confirmation(
        self,
        owner: Owner,
        conversation_id: UUID | None,
        *,
        latest: bool = False,
        now: datetime | None = None,
    ) -> PendingConfirmation | None:
        """The oldest pending, unexpired client confirmation of that conversation, or None."""
        moment = aware(now)
        if conversation_id is None and latest:
            conversation_id = self._current(owner)
        if conversation_id is None or await self.get_conversation(owner, conversation_id) is None:
            return None
        with self._lock:
            waiting = [
                c
                for c in self._confirmations.values()
                if c.conversation_id == conversation_id
                and c.approver == "client"
                and c.as_of(moment).status == "pending"
            ]
        return min(waiting, key=lambda c: c.created_at, default=None)

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
        check_decision(decision)
        moment = aware(now)
        with self._lock:
            confirmation = self._visible(confirmation_id, owner)
            if confirmation is None or confirmation.as_of(moment).status != "pending":
                return None
            decided = dataclasses.replace(
                confirmation, status=decision, decided_by=decided_by, decided_at=moment,
                reason=reason,
            )  # fmt: skip
            self._confirmations[confirmation_id] = decided
        return decided

    async def expire_due(
        self, now: datetime | None = None, *, confirmation_id: UUID | None = None
    ) -> list[PendingConfirmation]:
        """Mark pending confirmations past expiry (or only `confirmation_id`) as expired."""
        moment = aware(now)
        expired = []
        with self._lock:
            for key, confirmation in self._confirmations.items():
                if confirmation_id is not None and key != confirmation_id:
                    continue
                if confirmation.status == "pending" and confirmation.expires_at <= moment:
                    self._confirmations[key] = done = dataclasses.replace(
                        confirmation, status="expired", decided_at=moment, reason=TIMED_OUT_REASON
                    )
                    expired.append(done)
        return expired

    async def prune(self, older_than: datetime) -> dict[str, int]:
        """Delete stale conversations (with their items) and old resolved confirmations."""
        cutoff = aware(older_than)
        counts = dict.fromkeys(("conversations", "messages", "turns", "confirmations"), 0)
        with self._lock:
            stale = {k for k, c in self._conversations.items() if c.updated_at < cutoff}
            for key in stale:
                del self._conversations[key]
                counts["messages"] += len(self._messages.pop(key))
            counts["conversations"] = len(stale)
            for turn_id in [k for k, t in self._turns.items() if t.conversation_id in stale]:
                del self._turns[turn_id]
                counts["turns"] += 1
            for key, confirmation in list(self._confirmations.items()):
                if confirmation.conversation_id in stale or _resolved_before(confirmation, cutoff):
                    del self._confirmations[key]
                    counts["confirmations"] += 1
        return counts


def _resolved_before(confirmation: PendingConfirmation, cutoff: datetime) -> bool:
    if confirmation.status == "pending":
        return confirmation.expires_at < cutoff
    return confirmation.decided_at is not None and confirmation.decided_at < cutoff
