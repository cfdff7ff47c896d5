"""Model rows to store records and back: the one place the two shapes meet."""

from __future__ import annotations

from typing import Any

from chatomon.chat.store.records import (
    Conversation,
    ConversationSummary,
    MessageItem,
    Owner,
    PendingConfirmation,
    StoredMessage,
    TurnRecord,
)
from chatomon.django import models
from chatomon.providers.base import ToolCall
from chatomon.schemas import TokenUsage

__all__ = ["confirmation_record", "conversation_record", "message_record", "turn_record"]


def conversation_record(row: models.Conversation) -> Conversation:
    """The record of a conversation row."""
    summary = None
    if (
        row.summary_text is not None
        and row.summary_through_id is not None
        and row.summary_through_position is not None
    ):
        summary = ConversationSummary(
            row.summary_text, row.summary_through_id, row.summary_through_position
        )
    return Conversation(
        id=row.id,
        owner=Owner(row.owner_kind, row.owner_key),  # type: ignore[arg-type]
        title=row.title,
        created_at=row.created_at,
        updated_at=row.updated_at,
        summary=summary,
    )


def message_fields(item: MessageItem) -> dict[str, Any]:
    """The column values of an item to append."""
    return {
        "kind": item.kind,
        "content": item.content,
        "tool_calls": [call.to_dict() for call in item.tool_calls],
        "call_id": item.call_id,
        "name": item.name,
        "result": item.result,
        "blocked": item.blocked,
    }


def message_record(row: models.ChatMessage) -> StoredMessage:
    """The record of a message row."""
    item = MessageItem(
        kind=row.kind,  # type: ignore[arg-type]
        content=row.content,
        tool_calls=tuple(ToolCall.from_dict(call) for call in row.tool_calls),
        call_id=row.call_id,
        name=row.name,
        result=row.result,
        blocked=row.blocked,
    )
    return StoredMessage(row.pk, row.conversation_id, row.position, row.created_at, item)


def turn_record(row: models.Turn) -> TurnRecord:
    """The record of a turn row."""
    return TurnRecord(
        id=row.id,
        conversation_id=row.conversation_id,
        status=row.status,  # type: ignore[arg-type]
        started_at=row.started_at,
        finished_at=row.finished_at,
        report=row.report,
        final_action=row.final_action,
        escalated=row.escalated,
        usage=TokenUsage(input_tokens=row.input_tokens, output_tokens=row.output_tokens),
    )


def confirmation_record(row: models.PendingConfirmation) -> PendingConfirmation:
    """The record of a confirmation row, as stored (apply `as_of` for expiry on read)."""
    return PendingConfirmation(
        id=row.id,
        conversation_id=row.conversation_id,
        turn_id=row.turn_id,
        call_id=row.call_id,
        mutation=row.mutation,
        input=row.input,
        preview=row.preview,
        approver=row.approver,  # type: ignore[arg-type]
        status=row.status,  # type: ignore[arg-type]
        created_at=row.created_at,
        expires_at=row.expires_at,
        state=row.state,
        decided_by=row.decided_by,
        decided_at=row.decided_at,
        reason=row.reason,
    )
