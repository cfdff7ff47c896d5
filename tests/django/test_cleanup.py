"""`chat_cleanup` resumes the turns of expired confirmations before it prunes."""

from __future__ import annotations

import asyncio
import time
from io import StringIO
from uuid import UUID

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from chatomon.chat.store import Owner
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
