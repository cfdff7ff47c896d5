"""`GET chat/history/` and the conversation-level `confirmation_pending` refusal.

A reloaded widget restores its conversation from the server: the messages, the tool
calls, each confirmation with how it was decided, and the one still open. While a client
confirmation is open, a new message in that conversation is refused whatever carries it
(another socket, a stream, plain HTTP); a new conversation is not.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest
from channels.testing.websocket import WebsocketCommunicator
from django.test import AsyncClient
from django.utils import timezone

from chatomon.chat.store.records import MessageItem, Owner
from chatomon.django.models import PendingConfirmation
from chatomon.django.persistence.store import DjangoStore
from chatomon.django.routing import chat_websocket_application
from tests.asgi_app.fixtures import configure, make_part, make_user, sse_until, types

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("chat_project", "close_worker_connections"),
]
HISTORY = "/chat/history/"
CREATE = 'mutate createPart {"name": "Bolt"}'


async def logged_in(username: str = "alice") -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(await make_user(username))
    return client


async def post(client: AsyncClient, payload: Any, path: str = "/chat/") -> Any:
    return await client.post(path, json.dumps(payload), content_type="application/json")


async def history(client: AsyncClient, **query: str) -> Any:
    return await client.get(HISTORY, query)


async def waiting(client: AsyncClient, text: str = CREATE) -> dict[str, Any]:
    """A turn over SSE that now waits on a confirmation; its confirm_mutation event."""
    response = await post(client, {"text": text}, "/chat/stream/")
    events = await sse_until(response, "confirm_mutation")
    assert events[-1]["type"] == "confirm_mutation", events
    return events[-1]


async def test_a_visitor_without_a_chat_has_an_empty_history_and_gets_no_session():
    client = AsyncClient()
    response = await history(client)
    assert response.status_code == 200
    assert response.json() == {
        "conversation_id": None,
        "items": [],
        "pending": None,
        "running_turn_id": None,
        "max_message_chars": 8000,
    }
    assert "sessionid" not in response.cookies
    assert response["Cache-Control"] == "no-store"


async def test_the_history_lists_the_current_conversation_in_order():
    client = await logged_in()
    first = (await post(client, {"text": "hello"})).json()["events"][-1]
    await post(client, {"text": "query MaterialManager"})
    body = (await history(client)).json()
    assert body["conversation_id"] == first["conversation_id"]
    kinds = [item["type"] for item in body["items"]]
    assert kinds == ["user", "assistant", "user", "tool", "assistant"]
    assert body["items"][0] == {"type": "user", "content": "hello"}
    assert body["items"][1]["content"] == "Echo: hello"
    tool = body["items"][3]
    assert (tool["name"], tool["args"]["manager"]) == ("query", "MaterialManager")
    assert "data" in tool["result"]
    assert body["pending"] is None


async def test_a_pending_confirmation_comes_back_with_its_id_and_preview():
    client = await logged_in()
    announced = await waiting(client)
    body = (await history(client)).json()
    pending = body["pending"]

    # The event the turn announced, field for field: one shape of confirm_mutation. Only
    # the preview table's rows may come back in another order: PostgreSQL's jsonb keeps the
    # stored preview's keys in an order of its own.
    def rows_sorted(event: dict[str, Any]) -> dict[str, Any]:
        table = event["preview_table"]
        rows = sorted(table["rows"], key=lambda row: row["field"])
        return {**event, "preview_table": {**table, "rows": rows}}

    assert rows_sorted(pending) == rows_sorted(announced)
    assert (pending["type"], pending["mutation"], pending["approver"]) == (
        "confirm_mutation",
        "createPart",
        "client",
    )
    card = body["items"][-1]
    assert (card["type"], card["status"], card["decided_by"]) == ("confirmation", "pending", None)
    assert body["items"][0] == {"type": "user", "content": CREATE}


async def test_a_decision_reads_as_decided_by_you_with_its_time():
    client = await logged_in()
    announced = await waiting(client)
    decided = await post(
        client, {"confirmation_id": announced["id"], "confirmed": True}, "/chat/confirm/"
    )
    assert types(decided.json()["events"])[0] == "confirmation_resolved"
    body = (await history(client, conversation_id=announced["conversation_id"])).json()
    assert body["pending"] is None
    (card,) = [item for item in body["items"] if item["type"] == "confirmation"]
    assert (card["status"], card["decided_by"]) == ("approved", "you")
    assert card["decided_at"]
    # What the resumed turn stored comes after the card: the mutation's call and the answer.
    after = [item["type"] for item in body["items"][body["items"].index(card) + 1 :]]
    assert after == ["tool", "assistant"]


async def test_a_staff_decision_reads_a_staff_member_not_the_username():
    client = await logged_in()
    part = await make_part()
    text = f'mutate updatePartCost {{"part_id": {part}, "unit_cost": "2.00"}}'
    response = await post(client, {"text": text})
    announced = response.json()["events"][-1]
    assert (announced["type"], announced["approver"]) == ("confirm_mutation", "staff")
    assert (await history(client)).json()["pending"]["approver"] == "staff"
    staff = AsyncClient()
    decision = {"confirmation_id": announced["id"], "confirmed": False}
    await post(staff, decision, "/test/staff/decide/")
    body = (await history(client)).json()
    (card,) = [item for item in body["items"] if item["type"] == "confirmation"]
    # The end user's page never learns the staff member's username.
    assert (card["status"], card["decided_by"]) == ("rejected", "a staff member")


async def test_another_owner_cannot_read_a_conversation():
    client = await logged_in()
    first = (await post(client, {"text": "secret"})).json()["events"][-1]
    other = await logged_in("bob")
    response = await history(other, conversation_id=first["conversation_id"])
    assert response.status_code == 404
    assert response.json()["code"] == "conversation_not_found"
    assert (await history(other)).json()["items"] == []
    assert (await history(client, conversation_id="not-a-uuid")).status_code == 404


async def test_an_anonymous_session_reads_its_own_conversation():
    client = AsyncClient()
    await post(client, {"text": "hi there"})
    body = (await history(client)).json()
    assert [item["content"] for item in body["items"]] == ["hi there", "Echo: hi there"]


async def test_history_follows_the_permission_and_enabled_settings(settings):
    denied = await logged_in("blocked-user")
    response = await history(denied)
    assert (response.status_code, response.json()["code"]) == (403, "permission_denied")
    configure(settings, enabled=False)
    assert (await history(AsyncClient())).status_code == 404


async def test_history_answers_get_only():
    response = await (await logged_in()).post(HISTORY)
    assert response.status_code == 405


# The conversation-level refusal.


async def test_a_message_over_http_is_refused_while_the_confirmation_waits():
    client = await logged_in()
    announced = await waiting(client)
    response = await post(client, {"text": "something else"})
    assert response.status_code == 200
    (event,) = response.json()["events"]
    assert (event["code"], event["confirmation_id"]) == ("confirmation_pending", announced["id"])
    named = await post(
        client, {"text": "again", "conversation_id": announced["conversation_id"]}, "/chat/"
    )
    assert named.json()["events"][0]["code"] == "confirmation_pending"


async def test_a_new_stream_is_refused_and_a_new_conversation_is_not():
    client = await logged_in()
    await waiting(client)
    refused = await post(client, {"text": "more"}, "/chat/stream/")
    events = await sse_until(refused, "error")
    assert events[-1]["code"] == "confirmation_pending"
    fresh = await post(client, {"text": "start over", "new_conversation": True})
    assert fresh.json()["events"][-1]["type"] == "done"


async def test_another_socket_of_the_owner_is_refused_too():
    client = await logged_in()
    announced = await waiting(client)
    cookie = client.cookies["sessionid"].value
    socket = WebsocketCommunicator(
        chat_websocket_application(),
        "/chat/",
        headers=[(b"origin", b"http://testserver"), (b"cookie", f"sessionid={cookie}".encode())],
    )
    connected, _ = await socket.connect()
    assert connected
    await socket.send_json_to({"type": "message", "text": "sneak in"})
    event = await socket.receive_json_from(timeout=5)
    assert (event["code"], event["confirmation_id"]) == ("confirmation_pending", announced["id"])
    await socket.disconnect()


async def test_a_staff_approval_does_not_block_new_messages():
    client = await logged_in()
    part = await make_part()
    text = f'mutate updatePartCost {{"part_id": {part}, "unit_cost": "2.00"}}'
    assert (await post(client, {"text": text})).json()["events"][-1]["approver"] == "staff"
    assert (await post(client, {"text": "meanwhile"})).json()["events"][-1]["type"] == "done"


async def test_an_expired_confirmation_no_longer_blocks():
    client = await logged_in()
    announced = await waiting(client)
    past = timezone.now() - timedelta(seconds=1)
    await PendingConfirmation.objects.filter(pk=announced["id"]).aupdate(expires_at=past)
    answered = await post(client, {"text": "later"})
    assert answered.json()["events"][-1]["type"] == "done"
    card = (await history(client, conversation_id=announced["conversation_id"])).json()
    assert [i["status"] for i in card["items"] if i["type"] == "confirmation"] == ["expired"]


async def test_a_turn_still_running_is_named():
    client = await logged_in()
    done = (await post(client, {"text": "hello"})).json()["events"][-1]
    user = await make_user()
    running = await DjangoStore().start_turn(Owner.user(user.pk), UUID(done["conversation_id"]))
    body = (await history(client)).json()
    assert body["running_turn_id"] == running.id


async def test_a_blocked_message_shows_only_its_placeholder():
    client = await logged_in()
    conversation = (await post(client, {"text": "hello"})).json()["events"][-1]["conversation_id"]
    user = await make_user()
    await DjangoStore().append_messages(
        Owner.user(user.pk), UUID(conversation), [MessageItem.blocked_user("[blocked]")]
    )
    last = (await history(client)).json()["items"][-1]
    assert last == {"type": "user", "content": "[blocked]", "blocked": True}
