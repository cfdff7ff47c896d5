"""`pending_client_confirmation` on the ORM: one statement, whichever conversation it reads.

ChatService reads it before every message to an existing conversation (the
`confirmation_pending` rule), so it is pinned: the named conversation, or the owner's
current one as a subquery, never a separate read of the conversation first.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from chatomon.chat.store import Approver, NewConfirmation, Owner, PendingConfirmation
from chatomon.chat.store.records import OpenedTurn
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
    asked = NewConfirmation(
        call_id="c", mutation="m", input={}, preview=None, approver=approver,
        expires_at=NOW + timedelta(minutes=5), state={},
    )  # fmt: skip
    confirmation = turns.suspend_turn(
        OWNER, opened.conversation.id, opened.turn.id, items=[], confirmation=asked, now=NOW
    )
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
