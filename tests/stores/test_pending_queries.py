"""The pending client confirmation on the ORM: the statements of its check and of its read.

ChatService checks it inside the opening of every turn of an existing conversation (the
`confirmation_pending` rule, `turns.open_unless_pending`), so its statements are pinned:
the conversation's lock, the pending read, the items, the turn; a refusal stops after the
read, a new conversation never reads it. `pending_client_confirmation` (a read for
display) is one statement: the named conversation, or the owner's current one as a
subquery, never a separate read of the conversation first.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

from chatomon.chat.store import Approver, Owner, PendingConfirmation
from chatomon.chat.store.records import OpenedTurn
from chatomon.django import models
from chatomon.django.persistence import confirmations, turns
from tests.stores.conftest import NOW
from tests.stores.test_turn_queries import statements

pytestmark = pytest.mark.django_db
OWNER = Owner.user(5)


def waiting_in_a_new_conversation(
    approver: Approver = "client",
) -> tuple[OpenedTurn, PendingConfirmation]:
    """A turn opened in a new conversation of OWNER and its pending confirmation."""
    opened = turns.open_turn(OWNER, None, NOW)
    assert opened is not None
    confirmation = confirmations.create_confirmation(
        OWNER, opened.conversation.id, turn_id=opened.turn.id, call_id="c", mutation="m",
        input={}, preview=None, approver=approver, expires_at=NOW + timedelta(minutes=5),
        state={}, created_at=NOW,
    )  # fmt: skip
    return opened, confirmation


def test_the_current_conversation_is_read_in_one_statement() -> None:
    _, confirmation = waiting_in_a_new_conversation()
    found, sql = statements(
        lambda: confirmations.pending_client_confirmation(OWNER, None, True, NOW)
    )
    assert found == confirmation and len(sql) == 1
    # Another conversation started later is the current one now: nothing waits there.
    turns.open_turn(OWNER, None, NOW + timedelta(seconds=1))
    assert confirmations.pending_client_confirmation(OWNER, None, True, NOW) is None


def test_a_named_conversation_is_read_in_one_statement_and_owner_scoped() -> None:
    opened, confirmation = waiting_in_a_new_conversation()
    key = opened.conversation.id
    found, sql = statements(
        lambda: confirmations.pending_client_confirmation(OWNER, key, False, NOW)
    )
    assert found == confirmation and len(sql) == 1
    assert confirmations.pending_client_confirmation(Owner.user(6), key, False, NOW) is None
    later = NOW + timedelta(minutes=6)
    assert confirmations.pending_client_confirmation(OWNER, key, False, later) is None


def test_staff_approvals_and_no_conversation_read_nothing_pending() -> None:
    waiting_in_a_new_conversation(approver="staff")
    assert confirmations.pending_client_confirmation(OWNER, None, True, NOW) is None
    nothing, sql = statements(
        lambda: confirmations.pending_client_confirmation(OWNER, None, False, NOW)
    )
    assert nothing is None and sql == []


def kinds(sql: list[str]) -> list[str]:
    """The first word of each statement."""
    return [s.split()[0].upper() for s in sql]


def locks(statement: str) -> bool:
    """Whether `statement` locks its rows."""
    return "FOR UPDATE" in statement.upper()


LOCKING = connection.features.has_select_for_update
"""PostgreSQL locks the conversation's row; SQLite, whose transactions serialize writers, cannot."""


@pytest.mark.parametrize("latest", [False, True])
def test_a_refusal_is_the_lock_and_the_read_and_writes_nothing(latest: bool) -> None:
    opened, confirmation = waiting_in_a_new_conversation()
    key = None if latest else opened.conversation.id
    refused, sql = statements(lambda: turns.open_unless_pending(OWNER, key, NOW, latest=latest))
    assert refused == confirmation
    assert kinds(sql) == ["SELECT", "SELECT"] and locks(sql[0]) == LOCKING and not locks(sql[1])
    assert models.Turn.objects.count() == 1


@pytest.mark.parametrize("latest", [False, True])
def test_an_existing_conversation_opens_in_four_statements_under_its_lock(latest: bool) -> None:
    # The lock, the pending read, the items, the turn: the same count as the separate
    # read and `open_turn` it replaced, in one trip, computing the current conversation once.
    opened, _ = waiting_in_a_new_conversation(approver="staff")
    key = None if latest else opened.conversation.id
    later = NOW + timedelta(seconds=1)
    again, sql = statements(lambda: turns.open_unless_pending(OWNER, key, later, latest=latest))
    assert isinstance(again, OpenedTurn) and again.conversation.id == opened.conversation.id
    assert kinds(sql) == ["SELECT", "SELECT", "SELECT", "INSERT"]
    assert locks(sql[0]) == LOCKING and not any(locks(s) for s in sql[1:])
    assert "pendingconfirmation" in sql[1].lower()


def test_a_new_conversation_reads_nothing_pending() -> None:
    _, sql = statements(lambda: turns.open_unless_pending(OWNER, None, NOW))
    assert kinds(sql) == ["INSERT", "INSERT"]
    # With `latest` and no conversation yet: the (empty) lock's read, then the two inserts.
    opened, sql = statements(
        lambda: turns.open_unless_pending(Owner.user(6), None, NOW, latest=True)
    )
    assert isinstance(opened, OpenedTurn) and kinds(sql) == ["SELECT", "INSERT", "INSERT"]


def test_an_unknown_conversation_is_none_after_one_read() -> None:
    opened, _ = waiting_in_a_new_conversation()
    key = opened.conversation.id
    nothing, sql = statements(lambda: turns.open_unless_pending(Owner.user(6), key, NOW))
    assert nothing is None and kinds(sql) == ["SELECT"]
