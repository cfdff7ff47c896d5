"""Console test fixtures: users with and without the console's permissions, and turn data."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Permission, User
from django.db import connections
from django.test import Client

from chatomon.django.models import Conversation, PendingConfirmation, Turn

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
ALL_AREAS = (
    "view_dashboard", "use_chat", "view_approvals", "decide_confirmation", "view_turns",
    "review_escalation", "view_audit", "approve_mutation",
)  # fmt: skip
"""Every console area, and chatomon.approve_mutation (approving a staff approval)."""


@pytest.fixture(autouse=True)
def _close_worker_connections() -> Iterator[None]:
    """Close the connection asgiref's worker thread opened, or the test database stays busy."""
    yield
    asyncio.run(sync_to_async(connections.close_all)())


def make_user(username: str, *, staff: bool = True, perms: tuple[str, ...] = ALL_AREAS) -> User:
    user = User.objects.create_user(username, password="pw", is_staff=staff)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label__in=("chatomon_console", "chatomon"), codename__in=perms
        )
    )
    return user


@pytest.fixture
def staff(db: Any) -> User:
    return make_user("alice")


@pytest.fixture
def staff_client(staff: User) -> Client:
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def htmx_client(staff: User) -> Client:
    client = Client(headers={"HX-Request": "true"})
    client.force_login(staff)
    return client


def login(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def conversation(owner_key: str = "1", *, kind: str = "user") -> Conversation:
    return Conversation.objects.create(
        owner_kind=kind, owner_key=owner_key, created_at=NOW, updated_at=NOW
    )


def report(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "turn_id": "t",
        "conversation_id": None,
        "atom_name": "chat",
        "started_at": NOW.isoformat(),
        "duration_ms": 120.0,
        "final_action": "answered",
        "escalated": False,
        "input": [],
        "output": [],
        "user_message": None,
        "final_reply": None,
        "error_type": None,
        "error_message": None,
        "input_not_run": [],
        "capture_content": "none",
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    base.update(fields)
    return base


def orbital(name: str, action: str = "allow", **fields: Any) -> dict[str, Any]:
    return {
        "name": name, "side": "input", "kind": "Orbital", "fingerprint": "f", "action": action,
        "reason": None, "duration_ms": 5.0, "error_type": None, **fields,
    }  # fmt: skip


def make_turn(
    conv: Conversation | None = None,
    *,
    started_at: datetime = NOW,
    status: str = "completed",
    tokens: tuple[int, int] = (10, 5),
    **report_fields: Any,
) -> Turn:
    conv = conv or conversation()
    turn_id = uuid.uuid4().hex
    data = report(turn_id=turn_id, conversation_id=str(conv.id), **report_fields)
    return Turn.objects.create(
        id=turn_id,
        conversation=conv,
        status=status,
        report=data,
        final_action=data["final_action"],
        escalated=data["escalated"],
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        started_at=started_at,
        finished_at=started_at + timedelta(milliseconds=data["duration_ms"]),
    )


def make_confirmation(
    conv: Conversation | None = None,
    *,
    approver: str = "staff",
    expires_in: timedelta = timedelta(hours=1),
    now: datetime | None = None,
    **fields: Any,
) -> PendingConfirmation:
    moment = now or datetime.now(UTC)
    conv = conv or conversation()
    values: dict[str, Any] = {
        "conversation": conv,
        "turn_id": uuid.uuid4().hex,
        "call_id": "call-1",
        "mutation": "renameMaterial",
        "input": {"material_id": 1, "name": "Iron"},
        "preview": {
            "action": "update",
            "manager": "MaterialManager",
            "id": 1,
            "changes": [{"field": "name", "before": "Steel", "after": "Iron"}],
        },
        "approver": approver,
        "created_at": moment,
        "expires_at": moment + expires_in,
        **fields,
    }
    return PendingConfirmation.objects.create(**values)
