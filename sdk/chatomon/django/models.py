"""The chat persistence models: conversations, their items, turns and confirmations.

`chatomon.django.persistence.store.DjangoStore` is the way in; these models are its tables. Owner
keys are stored as `chatomon.chat.store.Owner` builds them (hashed when over 64 chars).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, ClassVar

from django.db import models

__all__ = ["AuditEvent", "ChatMessage", "Conversation", "PendingConfirmation", "Turn"]


class Conversation(models.Model):
    """One conversation of an authenticated user or an anonymous session."""

    id: models.UUIDField[uuid.UUID, uuid.UUID] = models.UUIDField(
        primary_key=True, default=uuid.uuid4, editable=False
    )
    owner_kind: models.CharField[str, str] = models.CharField(
        max_length=8, choices=[("user", "user"), ("session", "session")]
    )
    owner_key: models.CharField[str, str] = models.CharField(max_length=64)
    title: models.CharField[str, str] = models.CharField(max_length=200, blank=True, default="")
    created_at: models.DateTimeField[datetime, datetime] = models.DateTimeField()
    updated_at: models.DateTimeField[datetime, datetime] = models.DateTimeField()
    # The context summary and the exact message it covers (see chatomon.chat.context).
    summary_text: models.TextField[str | None, str | None] = models.TextField(null=True, blank=True)
    summary_through_id: models.BigIntegerField[int | None, int | None] = models.BigIntegerField(
        null=True, blank=True
    )
    summary_through_position: models.IntegerField[int | None, int | None] = models.IntegerField(
        null=True, blank=True
    )

    class Meta:
        """Indexes for the store's queries."""

        indexes: ClassVar[list[Any]] = [
            models.Index(
                fields=["owner_kind", "owner_key", "-updated_at"], name="chatomon_conv_owner"
            ),
            models.Index(fields=["updated_at"], name="chatomon_conv_updated"),
        ]

    def __str__(self) -> str:
        return f"{self.owner_kind}:{self.owner_key[:8]} {self.id}"


class ChatMessage(models.Model):
    """One ordered item of a conversation: text, a tool-call group or a tool result."""

    # No index of its own: the unique (conversation, position) constraint's serves it.
    conversation: models.ForeignKey[Conversation, Conversation] = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="items", db_index=False
    )
    conversation_id: uuid.UUID
    position: models.IntegerField[int, int] = models.IntegerField()
    kind: models.CharField[str, str] = models.CharField(max_length=16)
    content: models.TextField[str, str] = models.TextField(blank=True, default="")
    # tool_calls: [{"id", "name", "arguments"}] on a call group; result: a tool result.
    tool_calls: models.JSONField[Any, Any] = models.JSONField(default=list, blank=True)
    call_id: models.CharField[str | None, str | None] = models.CharField(
        max_length=200, null=True, blank=True
    )
    name: models.CharField[str | None, str | None] = models.CharField(
        max_length=200, null=True, blank=True
    )
    result: models.JSONField[Any, Any] = models.JSONField(null=True, blank=True)
    blocked: models.BooleanField[bool, bool] = models.BooleanField(default=False)
    created_at: models.DateTimeField[datetime, datetime] = models.DateTimeField()

    class Meta:
        """Indexes for the store's queries."""

        ordering: ClassVar[list[Any]] = ["conversation", "position"]
        constraints: ClassVar[list[Any]] = [
            models.UniqueConstraint(
                fields=["conversation", "position"], name="chatomon_message_position"
            )
        ]

    def __str__(self) -> str:
        return f"{self.conversation_id}#{self.position} {self.kind}"


class Turn(models.Model):
    """One turn of a conversation and, once finished, its TurnReport."""

    id: models.CharField[str, str] = models.CharField(primary_key=True, max_length=64)
    conversation: models.ForeignKey[Conversation, Conversation] = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="turns"
    )
    conversation_id: uuid.UUID
    status: models.CharField[str, str] = models.CharField(max_length=24)
    report: models.JSONField[Any, Any] = models.JSONField(null=True, blank=True)
    final_action: models.CharField[str | None, str | None] = models.CharField(
        max_length=32, null=True, blank=True
    )
    escalated: models.BooleanField[bool, bool] = models.BooleanField(default=False)
    input_tokens: models.IntegerField[int, int] = models.IntegerField(default=0)
    output_tokens: models.IntegerField[int, int] = models.IntegerField(default=0)
    started_at: models.DateTimeField[datetime, datetime] = models.DateTimeField()
    finished_at: models.DateTimeField[datetime | None, datetime | None] = models.DateTimeField(
        null=True, blank=True
    )

    class Meta:
        """Indexes for the store's queries."""

        indexes: ClassVar[list[Any]] = [
            models.Index(fields=["status", "-started_at"], name="chatomon_turn_status")
        ]

    def __str__(self) -> str:
        return f"turn {self.id} {self.status}"


class PendingConfirmation(models.Model):
    """A mutation waiting for approval, and the serialized turn state to resume."""

    id: models.UUIDField[uuid.UUID, uuid.UUID] = models.UUIDField(
        primary_key=True, default=uuid.uuid4, editable=False
    )
    conversation: models.ForeignKey[Conversation, Conversation] = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="confirmations"
    )
    conversation_id: uuid.UUID
    turn_id: models.CharField[str, str] = models.CharField(max_length=64)
    call_id: models.CharField[str, str] = models.CharField(max_length=200)
    mutation: models.CharField[str, str] = models.CharField(max_length=200)
    input: models.JSONField[Any, Any] = models.JSONField(default=dict)
    preview: models.JSONField[Any, Any] = models.JSONField(null=True, blank=True)
    approver: models.CharField[str, str] = models.CharField(max_length=8)
    status: models.CharField[str, str] = models.CharField(max_length=16, default="pending")
    state: models.JSONField[Any, Any] = models.JSONField(default=dict)
    created_at: models.DateTimeField[datetime, datetime] = models.DateTimeField()
    expires_at: models.DateTimeField[datetime, datetime] = models.DateTimeField()
    decided_by: models.CharField[str | None, str | None] = models.CharField(
        max_length=200, null=True, blank=True
    )
    decided_at: models.DateTimeField[datetime | None, datetime | None] = models.DateTimeField(
        null=True, blank=True
    )
    reason: models.CharField[str | None, str | None] = models.CharField(
        max_length=200, null=True, blank=True
    )

    class Meta:
        """Indexes for the store's queries; the permission a staff approval needs."""

        indexes: ClassVar[list[Any]] = [
            models.Index(fields=["status", "expires_at"], name="chatomon_confirm_due"),
            models.Index(fields=["turn_id"], name="chatomon_confirm_turn"),
        ]
        # The staff console requires it to approve (not to reject) a staff approval.
        permissions: ClassVar[list[tuple[str, str]]] = [
            ("approve_mutation", "Can approve a mutation waiting for staff approval")
        ]

    def __str__(self) -> str:
        return f"confirmation {self.id} {self.mutation} {self.status}"


class AuditEvent(models.Model):
    """One sanitized audit record of chat activity (chatomon.django.audit writes them).

    Plain identifiers, not foreign keys: the audit trail outlives the conversations that
    `chat_cleanup` prunes. `actor` is "user:<pk>" or "anonymous". The indexes serve keyset
    pagination newest first, overall and filtered by type, actor, conversation or turn.
    """

    created_at: models.DateTimeField[datetime, datetime] = models.DateTimeField()
    type: models.CharField[str, str] = models.CharField(max_length=40)
    actor: models.CharField[str, str] = models.CharField(max_length=200, blank=True, default="")
    conversation: models.CharField[str, str] = models.CharField(
        max_length=64, blank=True, default=""
    )
    turn: models.CharField[str, str] = models.CharField(max_length=64, blank=True, default="")
    payload: models.JSONField[Any, Any] = models.JSONField(default=dict)

    class Meta:
        """Indexes for browsing a large trail page by page."""

        indexes: ClassVar[list[Any]] = [
            models.Index(fields=["created_at", "id"], name="chatomon_audit_time"),
            models.Index(fields=["type", "created_at", "id"], name="chatomon_audit_type"),
            models.Index(fields=["actor", "created_at", "id"], name="chatomon_audit_actor"),
            models.Index(fields=["conversation", "created_at", "id"], name="chatomon_audit_conv"),
            models.Index(fields=["turn", "created_at", "id"], name="chatomon_audit_turn"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.created_at:%Y-%m-%d %H:%M:%S} {self.actor}"
