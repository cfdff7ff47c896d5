"""`chat_cleanup` resumes the turns of expired confirmations and aborts orphaned turns."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from io import StringIO
from uuid import UUID

import pytest
from asgiref.sync import async_to_sync
from django.core.management import CommandError, call_command

from chatomon.chat.store import NewConfirmation, Owner
from chatomon.data.actor import SimpleActor
from chatomon.django.persistence.store import DjangoStore
from chatomon.django.service import chat_service
from tests.asgi_app.project import chatomon

pytestmark = pytest.mark.django_db(transaction=True)

CREATE = 'mutate createPart {"name": "Bolt"}'


async def suspend_a_turn() -> dict[str, object]:
    events = [e async for e in chat_service().run_turn(SimpleActor(id=1), CREATE)]
    assert events[-1]["type"] == "confirm_mutation", events
    return events[-1]


def test_an_expired_confirmation_resumes_its_turn_when_chat_is_enabled(settings: object) -> None:
    settings.CHATOMON = chatomon(confirm_timeout_seconds=0.05)
    pending = async_to_sync(suspend_a_turn)()
    time.sleep(0.1)
    out = StringIO()
    call_command("chat_cleanup", stdout=out)
    assert "expired 1 confirmation(s)" in out.getvalue()
    store = DjangoStore()
    turn = asyncio.run(store.get_turn(str(pending["turn_id"])))
    assert turn is not None and turn.status == "completed"
    messages = asyncio.run(store.messages(Owner.user(1), UUID(str(pending["conversation_id"]))))
    assert messages[-1].item.kind == "assistant"
    assert "timed_out" in messages[-1].item.content  # the model saw the timeout


def test_with_chat_disabled_it_expires_and_aborts_their_turns(settings: object) -> None:
    settings.CHATOMON = chatomon(confirm_timeout_seconds=0.05)
    pending = async_to_sync(suspend_a_turn)()
    time.sleep(0.1)
    settings.CHATOMON = chatomon(enabled=False)
    out = StringIO()
    call_command("chat_cleanup", stdout=out)
    assert "expired 1 confirmation(s)" in out.getvalue()
    turn = asyncio.run(DjangoStore().get_turn(str(pending["turn_id"])))
    assert turn is not None and turn.status == "aborted"


def _turn_started(turn_id: str, seconds_ago: float) -> None:
    from django.utils import timezone  # noqa: PLC0415

    from chatomon.django.models import Turn  # noqa: PLC0415

    started = timezone.now() - timedelta(seconds=seconds_ago)
    Turn.objects.filter(pk=turn_id).update(started_at=started)


def test_it_aborts_turns_left_running_past_the_staleness_rule() -> None:
    # A process that died mid-turn (or lost its database for longer than its retries)
    # leaves its turn running: the sweep records it aborted once it is stale, and leaves
    # a live turn (recent, or resumed by a decision since) alone.
    store = DjangoStore()
    owner = Owner.user(1)

    async def running_turns() -> list[str]:
        conversation = await store.create_conversation(owner)
        return [(await store.start_turn(owner, conversation.id)).id for _ in range(3)]

    orphan, live, resumed = async_to_sync(running_turns)()
    _turn_started(orphan, seconds_ago=7200)
    _turn_started(resumed, seconds_ago=7200)
    async_to_sync(resume_recently)(resumed)
    out = StringIO()
    call_command("chat_cleanup", "--stale-after", "3600", stdout=out)
    assert "aborted 1 orphaned turn(s)" in out.getvalue()
    statuses = {t: asyncio.run(store.get_turn(t)).status for t in (orphan, live, resumed)}
    assert statuses == {orphan: "aborted", live: "running", resumed: "running"}


async def resume_recently(turn_id: str) -> None:
    """Give the turn a confirmation decided just now, as a resumed turn has."""
    store = DjangoStore()
    turn = await store.get_turn(turn_id)
    assert turn is not None
    owner = Owner.user(1)
    asked = NewConfirmation(
        call_id="c1", mutation="createPart", input={}, preview=None, approver="staff",
        expires_at=datetime.now(UTC) + timedelta(hours=1), state={},
    )  # fmt: skip
    pending = await store.suspend_turn(
        owner, turn.conversation_id, turn_id, items=[], confirmation=asked
    )
    await store.claim(pending.id, decision="approved", decided_by="staff:tester")
    await store.update_turn(turn_id, status="running")


def test_stale_after_must_be_positive() -> None:
    with pytest.raises(CommandError, match="stale-after"):
        call_command("chat_cleanup", "--stale-after", "0")
