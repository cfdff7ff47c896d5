"""The records a conversation store keeps, and the rules every store shares.

Records are frozen dataclasses: what a store returns is a snapshot, never a live row.
The rules (owner keys, turn transitions, expiry on read) live here so that the memory
store and the Django store cannot drift apart. The store errors are part of
`chatomon.errors`' one tree; they are re-exported here and from `chatomon.chat.store`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

from chatomon.errors import ConversationNotFoundError, StoreError, TurnTransitionError
from chatomon.providers.base import ToolCall
from chatomon.schemas import DEFAULT_BLOCKED_PLACEHOLDER, TokenUsage, TurnReport

__all__ = [
    "OWNER_KEY_LENGTH",
    "TIMED_OUT_REASON",
    "Approver",
    "ConfirmationStatus",
    "Conversation",
    "ConversationNotFoundError",
    "ConversationSummary",
    "Decision",
    "MessageItem",
    "MessageKind",
    "NewConfirmation",
    "OpenedTurn",
    "Owner",
    "PendingConfirmation",
    "StoreError",
    "StoredMessage",
    "TurnRecord",
    "TurnStatus",
    "TurnTransitionError",
    "aware",
    "check_decision",
    "check_transition",
    "predecessors",
    "turn_changes",
]

OWNER_KEY_LENGTH = 64
"""Width of the owner column; longer keys are stored as their SHA-256 hex digest."""
TIMED_OUT_REASON = "confirmation_timed_out"
"""The reason recorded on a confirmation that expired undecided."""

TurnStatus = Literal["running", "awaiting_confirmation", "completed", "aborted"]
ConfirmationStatus = Literal["pending", "approved", "rejected", "expired", "cancelled"]
Decision = Literal["approved", "rejected", "cancelled"]
Approver = Literal["client", "staff"]
MessageKind = Literal["user", "assistant", "tool_calls", "tool_result"]

TURN_TRANSITIONS: Mapping[str, frozenset[str]] = {
    "running": frozenset({"completed", "aborted", "awaiting_confirmation"}),
    "awaiting_confirmation": frozenset({"running", "aborted"}),
    "completed": frozenset(),
    "aborted": frozenset(),
}
"""The allowed moves of `Turn.status` (DESIGN.md §4b); finished turns never move again."""
DECISIONS = frozenset({"approved", "rejected", "cancelled"})


def check_transition(turn_id: str, current: str, requested: str) -> None:
    """Raise TurnTransitionError unless `current -> requested` is allowed."""
    if requested not in TURN_TRANSITIONS:
        raise ValueError(
            f"unknown turn status {requested!r}; expected one of {sorted(TURN_TRANSITIONS)}"
        )
    if requested not in TURN_TRANSITIONS[current]:
        raise TurnTransitionError(turn_id, current, requested, TURN_TRANSITIONS[current])


def predecessors(status: str) -> frozenset[str]:
    """The statuses a turn may move to `status` from."""
    return frozenset(k for k, targets in TURN_TRANSITIONS.items() if status in targets)


def turn_changes(
    status: str, report: TurnReport | None, usage: TokenUsage | None, now: datetime
) -> dict[str, Any]:
    """The `TurnRecord` fields a move to `status` changes, for every store.

    An end stamps `finished_at`; a report brings its final action, escalation and usage
    (`usage`, when given, wins over the report's).
    """
    changes: dict[str, Any] = {"status": status}
    if status in ("completed", "aborted"):
        changes["finished_at"] = now
    if report is not None:
        changes.update(
            report=report.model_dump(mode="json"),
            final_action=report.final_action,
            escalated=report.escalated,
            usage=report.usage,
        )
    if usage is not None:
        changes["usage"] = usage
    return changes


def check_decision(decision: str) -> None:
    """Raise ValueError unless `decision` is a status a claim may set."""
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {sorted(DECISIONS)}, got {decision!r}")


def aware(moment: datetime | None) -> datetime:
    """`moment` (default: now) as an aware UTC datetime; naive datetimes are refused."""
    if moment is None:
        return datetime.now(UTC)
    if moment.tzinfo is None:
        raise ValueError("store timestamps must be timezone-aware (UTC), got a naive datetime")
    return moment.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Owner:
    """Who a conversation belongs to: an authenticated user or an anonymous session.

    A key longer than the 64-character column is replaced by its SHA-256 hex digest when
    the owner is built, so the raw session key is never stored. Digests are stable, so
    the same session always maps to the same owner.

    Examples:
        >>> Owner.user(42)
        Owner(kind='user', key='42')
        >>> len(Owner.session("s" * 100).key)
        64
    """

    kind: Literal["user", "session"]
    key: str

    def __post_init__(self) -> None:
        if self.kind not in ("user", "session"):
            raise ValueError(f"owner kind must be 'user' or 'session', got {self.kind!r}")
        if not self.key:
            raise ValueError("an owner needs a non-empty user id or session key")
        if len(self.key) > OWNER_KEY_LENGTH:
            digest = hashlib.sha256(self.key.encode()).hexdigest()
            object.__setattr__(self, "key", digest)

    @classmethod
    def user(cls, user_id: object) -> Owner:
        """The owner for an authenticated user's id."""
        return cls("user", str(user_id))

    @classmethod
    def session(cls, session_key: str) -> Owner:
        """The owner for an anonymous session key."""
        return cls("session", session_key)


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """A summary of the older messages, with the exact last message it covers.

    Attributes:
        text: The summary.
        through_id: Id of the last message covered.
        through_position: Position of that message.
    """

    text: str
    through_id: int
    through_position: int


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation of one owner."""

    id: UUID
    owner: Owner
    title: str
    created_at: datetime
    updated_at: datetime
    summary: ConversationSummary | None = None


@dataclass(frozen=True, slots=True)
class MessageItem:
    """An item to append: user or assistant text, a tool-call group, or a tool result.

    Build items with the class methods. `call_id` is None only on historical tool rows
    stored without a call identity.
    """

    kind: MessageKind
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    call_id: str | None = None
    name: str | None = None
    result: Any = None
    blocked: bool = False

    @classmethod
    def user(cls, text: str) -> MessageItem:
        """A user message."""
        return cls("user", text)

    @classmethod
    def blocked_user(cls, placeholder: str = DEFAULT_BLOCKED_PLACEHOLDER) -> MessageItem:
        """A blocked user message: only the placeholder is kept, never the text."""
        return cls("user", placeholder, blocked=True)

    @classmethod
    def assistant(cls, text: str) -> MessageItem:
        """An assistant answer."""
        return cls("assistant", text)

    @classmethod
    def calls(cls, calls: Sequence[ToolCall], text: str = "") -> MessageItem:
        """An assistant tool-call group (ids, names, arguments)."""
        return cls("tool_calls", text, tool_calls=tuple(calls))

    @classmethod
    def tool_result(cls, call_id: str | None, name: str, result: Any) -> MessageItem:
        """The structured result of one tool call."""
        return cls("tool_result", call_id=call_id, name=name, result=result)


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A stored conversation item: its id, position (0, 1, ...) and the item."""

    id: int
    conversation_id: UUID
    position: int
    created_at: datetime
    item: MessageItem


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn: its status, and once finished its TurnReport as JSON."""

    id: str
    conversation_id: UUID
    status: TurnStatus
    started_at: datetime
    finished_at: datetime | None = None
    report: Mapping[str, Any] | None = None
    final_action: str | None = None
    escalated: bool = False
    usage: TokenUsage = field(default_factory=TokenUsage)


@dataclass(frozen=True, slots=True)
class PendingConfirmation:
    """A mutation waiting for approval, with the opaque `state` to resume its turn."""

    id: UUID
    conversation_id: UUID
    turn_id: str
    call_id: str
    mutation: str
    input: Mapping[str, Any]
    preview: Any
    approver: Approver
    status: ConfirmationStatus
    created_at: datetime
    expires_at: datetime
    state: Mapping[str, Any]
    decided_by: str | None = None
    decided_at: datetime | None = None
    reason: str | None = None

    def as_of(self, now: datetime) -> PendingConfirmation:
        """This record as a reader at `now` sees it: pending past expiry reads as expired."""
        if self.status == "pending" and self.expires_at <= now:
            return dataclasses.replace(self, status="expired", reason=TIMED_OUT_REASON)
        return self


@dataclass(frozen=True, slots=True)
class NewConfirmation:
    """What a suspended turn asks to have decided (`ConversationStore.suspend_turn`).

    Attributes:
        call_id: The tool call that asked for the mutation.
        mutation: The mutation's name.
        input: Its validated input (what runs once approved).
        preview: What it would change, as the asker and the approver see it.
        approver: Who decides: "client" (the asker) or "staff".
        expires_at: When it times out undecided.
        state: The turn's serialized state, to resume it from.
    """

    call_id: str
    mutation: str
    input: Mapping[str, Any]
    preview: Any
    approver: Approver
    expires_at: datetime
    state: Mapping[str, Any]

    def __post_init__(self) -> None:
        """Refuse an approver the stores could not route."""
        if self.approver not in ("client", "staff"):
            raise ValueError(f"approver must be 'client' or 'staff', got {self.approver!r}")


@dataclass(frozen=True, slots=True)
class OpenedTurn:
    """What `ConversationStore.open_turn` gives: where a new turn runs and what came before.

    Attributes:
        conversation: The conversation (new, or the one named).
        messages: Its stored items in position order (empty for a new conversation).
        turn: The new running turn.
    """

    conversation: Conversation
    messages: list[StoredMessage]
    turn: TurnRecord
