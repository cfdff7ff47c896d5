"""`POST chat/`: the JSON envelope, status codes, CSRF, methods, permission, bad input, limits."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from uuid import uuid4

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import AsyncClient

from chatomon.django.models import ChatMessage, Conversation, Turn
from chatomon.django.persistence.store import DjangoStore
from tests.asgi_app.fixtures import (
    configure,
    make_part,
    make_user,
    sse_events,
    types,
)
from tests.testapp.models import Part

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("chat_project", "close_worker_connections"),
]
CHAT = "/chat/"


async def post(client: AsyncClient, payload: Any, path: str = CHAT, **extra: Any) -> Any:
    body = payload if isinstance(payload, bytes | str) else json.dumps(payload)
    return await client.post(path, body, content_type="application/json", **extra)


async def count(model: Any) -> Any:
    return await model.objects.acount()


async def test_a_plain_answer_is_the_envelope_of_ordered_events_and_the_joined_text():
    response = await post(AsyncClient(), {"text": "hello"})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert types(body["events"]) == ["text_chunk", "text_chunk", "done"]
    assert body["answer"] == "Echo: hello"
    done = body["events"][-1]
    assert done["usage"] == {"input_tokens": 1, "output_tokens": 1}
    assert all(e["conversation_id"] == done["conversation_id"] for e in body["events"])
    assert all(e["turn_id"] == done["turn_id"] for e in body["events"])


async def test_the_anonymous_session_owns_the_conversation_it_continues():
    client = AsyncClient()
    first = (await post(client, {"text": "one"})).json()["events"][-1]
    assert "sessionid" in client.cookies
    conversation = first["conversation_id"]
    second = (await post(client, {"text": "two", "conversation_id": conversation})).json()
    assert second["events"][-1]["conversation_id"] == conversation
    stranger = (await post(AsyncClient(), {"text": "x", "conversation_id": conversation})).json()
    assert types(stranger["events"]) == ["error"]
    assert stranger["events"][0]["code"] == "conversation_not_found"
    unknown = (await post(client, {"text": "x", "conversation_id": str(uuid4())})).json()
    assert unknown["events"][0]["code"] == "conversation_not_found"
    assert await count(Conversation) == 1


async def test_a_logged_in_user_owns_conversations_across_sessions():
    user = await make_user()
    first, second = AsyncClient(), AsyncClient()
    await first.aforce_login(user)
    await second.aforce_login(user)
    done = (await post(first, {"text": "one"})).json()["events"][-1]
    again = await post(second, {"text": "two", "conversation_id": done["conversation_id"]})
    assert again.json()["events"][-1]["type"] == "done"


async def test_a_read_with_one_tool_round():
    await make_part()
    body = (await post(AsyncClient(), {"text": "query PartManager"})).json()
    assert types(body["events"]) == ["tool_call", "tool_result", "text_chunk", "done"]
    assert [row["name"] for row in body["events"][1]["result"]["data"]] == ["Gear"]
    assert body["answer"].startswith("Tool said:")


@pytest.mark.parametrize("method", ["get", "put", "patch", "delete", "options"])
async def test_every_method_but_post_is_djangos_405(method):
    response = await getattr(AsyncClient(), method)(CHAT)
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert await count(Turn) == 0


async def test_a_post_without_the_csrf_token_is_djangos_403_before_any_event():
    client = AsyncClient(enforce_csrf_checks=True)
    response = await post(client, {"text": "hello"})
    assert response.status_code == 403
    assert b"CSRF" in response.content
    assert await count(Turn) == 0
    token = (await client.get("/test/csrf/")).json()["token"]
    accepted = await post(client, {"text": "hello"}, headers={"X-CSRFToken": token})
    assert accepted.status_code == 200


async def test_permission_denial_is_403_and_the_permission_sees_user_and_scope(
    settings,
):
    seen: list[tuple[Any, Any]] = []

    def permission(user: Any, scope: Any) -> bool:
        seen.append((user, scope))
        return False

    configure(settings, permission=permission)
    response = await post(AsyncClient(), {"text": "hello"})
    assert response.status_code == 403
    assert response.json()["events"][0]["code"] == "permission_denied"
    assert await count(Turn) == 0
    user, scope = seen[0]
    assert not user.is_authenticated
    assert scope["path"] == CHAT
    blocked = await make_user("blocked-bob")
    client = AsyncClient()
    await client.aforce_login(blocked)
    configure(settings)  # the project's own permission: "blocked..." users may not chat
    assert (await post(client, {"text": "hello"})).status_code == 403


async def test_a_permission_may_use_the_orm(settings):
    def permission(user: Any, scope: Any) -> bool:
        # A sync permission runs in a worker thread, where the ORM may run (not the loop).
        return not get_user_model().objects.filter(username="chat-closed").exists()

    configure(settings, permission=permission)
    assert (await post(AsyncClient(), {"text": "hello"})).status_code == 200
    await make_user("chat-closed")
    assert (await post(AsyncClient(), {"text": "hello"})).status_code == 403


async def test_an_async_permission_is_awaited(settings):
    async def permission(user: Any, scope: Any) -> bool:
        return scope["method"] == "POST" and False

    configure(settings, permission=permission)
    assert (await post(AsyncClient(), {"text": "hello"})).status_code == 403


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"not json", 400, "bad_message"),
        (b"[]", 400, "bad_message"),
        (b'"hello"', 400, "bad_message"),
        ({}, 400, "bad_message"),
        ({"text": ""}, 400, "bad_message"),
        ({"text": "   "}, 400, "bad_message"),
        ({"text": 12}, 400, "bad_message"),
        ({"text": "hi", "conversation_id": 12}, 400, "bad_message"),
        ({"text": "x" * 8001}, 400, "message_too_long"),
        ({"text": "x" * (1024 * 1024)}, 413, "request_too_large"),
        (b'{"text": "hi", "x": ' + b"[" * 1000 + b"]" * 1000 + b"}", 400, "bad_message"),
        (b'{"text": "\\ud800"}', 400, "bad_message"),
        (b'{"text": "a\\u0000b"}', 400, "bad_message"),
        (b'{"text": "hi", "conversation_id": "\\u0000"}', 400, "bad_message"),
        ('{"text": "\ud800"}'.encode("utf-8", "surrogatepass"), 400, "bad_message"),
    ],
)
async def test_bad_input_gets_its_code_and_no_side_effect(body, status, code):
    client = AsyncClient()
    response = await post(client, body)
    assert response.status_code == status
    envelope = response.json()
    assert envelope["answer"] == ""
    assert [(e["type"], e["code"]) for e in envelope["events"]] == [("error", code)]
    assert "sessionid" not in response.cookies
    assert await count(Conversation) == 0
    assert await count(Turn) == 0


FORM_BODIES = [
    (
        b'--b\r\nContent-Disposition: form-data; name="text"\r\n\r\nhi\r\n--b--\r\n',
        "multipart/form-data; boundary=b",
        400,
    ),
    (b"not multipart at all", "multipart/form-data; boundary=b", 400),
    (b"{}", "multipart/form-data", 400),
    (b"&".join(b"f%d=1" % n for n in range(1001)), "application/x-www-form-urlencoded", 400),
    (b"text=" + b"x" * (3 * 1024 * 1024), "application/x-www-form-urlencoded", 413),
]
ENDPOINTS = [
    (CHAT, "bad_message"),
    ("/chat/stream/", "bad_message"),
    ("/chat/confirm/", "bad_event"),
]


async def csrf_client() -> tuple[AsyncClient, str]:
    """A client whose CSRF check runs (and reads form bodies), with its token."""
    client = AsyncClient(enforce_csrf_checks=True)
    return client, (await client.get("/test/csrf/")).json()["token"]


@pytest.mark.parametrize(("body", "content_type", "status"), FORM_BODIES)
@pytest.mark.parametrize(("path", "code"), ENDPOINTS)
async def test_bodies_the_csrf_check_reads_as_a_form_get_the_endpoints_code(
    body, content_type, status, path, code
):
    # The CSRF check reads request.POST, which parses these bodies before the view runs:
    # a multipart one left no body to read (a 500), the others failed as Django's HTML 400.
    client, token = await csrf_client()
    headers = {"X-CSRFToken": token}
    response = await client.post(path, body, content_type=content_type, headers=headers)
    assert response.status_code == status
    streamed = path == "/chat/stream/"
    events = sse_events(response.content) if streamed else response.json()["events"]
    code = "request_too_large" if status == 413 else code
    assert [(e["type"], e["code"]) for e in events] == [("error", code)]
    assert await count(Turn) == 0


async def test_json_labelled_as_a_form_is_still_read_as_json():
    client, token = await csrf_client()
    form = "application/x-www-form-urlencoded"
    headers = {"X-CSRFToken": token}
    response = await client.post(CHAT, b'{"text": "hi"}', content_type=form, headers=headers)
    assert response.json()["answer"] == "Echo: hi"


async def test_max_message_chars_is_configurable(settings):
    configure(settings, max_message_chars=5)
    refused = (await post(AsyncClient(), {"text": "123456"})).json()["events"][0]
    assert (refused["code"], refused["max_message_chars"]) == ("message_too_long", 5)
    assert (await post(AsyncClient(), {"text": "12345"})).status_code == 200


async def test_unknown_request_fields_are_ignored():
    response = await post(AsyncClient(), {"text": "hi", "profile": "x", "trust_group": "y"})
    assert response.json()["answer"] == "Echo: hi"


async def test_requests_over_the_budget_get_429_with_retry_after(settings):
    configure(settings, rate_limit={"requests": 2, "window_seconds": 60})
    client = AsyncClient()
    for _ in range(2):
        assert (await post(client, {"text": "hi"})).status_code == 200
    refused = await post(client, {"text": "hi"})
    assert refused.status_code == 429
    event = refused.json()["events"][0]
    assert event["code"] == "rate_limited"
    assert 0 < event["retry_after_seconds"] <= 60
    assert refused["Retry-After"] == str(event["retry_after_seconds"])
    assert await count(Turn) == 2
    # Another session has its own budget.
    assert (await post(AsyncClient(), {"text": "hi"})).status_code == 200


async def test_an_exhausted_token_budget_ends_the_next_turn_with_rate_limited(
    settings,
):
    configure(settings, rate_limit={"requests": 100, "tokens": 10, "window_seconds": 60})
    client = AsyncClient()
    assert (await post(client, {"text": "tokens 6"})).json()["events"][-1]["type"] == "done"
    second = (await post(client, {"text": "hi"})).json()["events"][-1]
    assert (second["type"], second["code"]) == ("error", "rate_limited")
    assert second["retry_after_seconds"] > 0


async def test_a_client_confirmation_needs_a_confirming_transport():
    user = await make_user()
    client = AsyncClient()
    await client.aforce_login(user)
    body = (await post(client, {"text": 'mutate createPart {"name": "Bolt"}'})).json()
    last = body["events"][-1]
    assert (last["type"], last["code"]) == ("error", "confirmation_required_transport")
    assert "confirm_mutation" not in types(body["events"])
    assert not await Part.objects.filter(name="Bolt").aexists()


async def test_a_staff_approval_suspends_the_turn_over_plain_http():
    user = await make_user()
    part = await make_part()
    client = AsyncClient()
    await client.aforce_login(user)
    text = f'mutate updatePartCost {{"part_id": {part}, "unit_cost": "5.00"}}'
    last = (await post(client, {"text": text})).json()["events"][-1]
    assert (last["type"], last["approver"], last["mutation"]) == (
        "confirm_mutation",
        "staff",
        "updatePartCost",
    )
    turn = await Turn.objects.aget(pk=last["turn_id"])
    assert turn.status == "awaiting_confirmation"


async def test_a_provider_failure_is_the_generic_chat_error_with_status_200():
    response = await post(AsyncClient(), {"text": "fail"})
    assert response.status_code == 200
    last = response.json()["events"][-1]
    assert (last["type"], last["code"]) == ("error", "chat_error")
    assert "fail" not in last["message"]
    assert await sync_to_async(lambda: Turn.objects.get().status)() == "aborted"


async def test_a_turn_that_cannot_be_recorded_ends_with_chat_error(monkeypatch):
    # The pipeline closes the turn as it ends; a failure there ends it as aborted.
    async def gone(self: Any, *args: Any, **kwargs: Any) -> None:
        raise OSError("database is gone")

    monkeypatch.setattr(DjangoStore, "close_turn", gone)
    response = await post(AsyncClient(), {"text": "hello"})
    assert response.status_code == 200
    events = response.json()["events"]
    assert [event["type"] for event in events][-2:] == ["text_chunk", "error"]
    assert events[-1]["code"] == "chat_error"
    assert await sync_to_async(lambda: Turn.objects.get().status)() == "aborted"


async def test_a_malformed_conversation_id_is_not_found_and_logs_nothing(caplog):
    with caplog.at_level("WARNING", logger="chatomon.django.transports.admission"):
        body = (await post(AsyncClient(), {"text": "x", "conversation_id": "not-a-uuid"})).json()
    assert body["events"][0]["code"] == "conversation_not_found"
    assert not [r for r in caplog.records if r.name == "chatomon.django.transports.admission"]


async def test_chat_views_stay_out_of_atomic_requests(settings):
    # A turn must not run inside one request-wide transaction (seconds of model time, and
    # its records must survive a failing request).
    seen: list[bool] = []

    def permission(user: Any, scope: Any) -> bool:
        seen.append(connection.in_atomic_block)
        return True

    settings.DATABASES["default"]["ATOMIC_REQUESTS"] = True
    configure(settings, permission=permission)
    try:
        assert (await post(AsyncClient(), {"text": "hello"})).status_code == 200
    finally:
        settings.DATABASES["default"]["ATOMIC_REQUESTS"] = False
    assert seen == [False]


async def test_a_turn_waiting_on_its_model_is_stored_as_running_meanwhile(settings):
    # The turn is written as running when it opens, so that the console sees it while
    # the model answers.
    configure(settings, provider_config={"delay_seconds": 1.0})
    answering = asyncio.create_task(post(AsyncClient(), {"text": "hello"}))

    def running_turns() -> bool:
        # On a thread of its own: the view holds the thread of thread-sensitive calls.
        try:
            return Turn.objects.filter(status="running").exists()
        finally:
            connection.close()

    seen_running = False
    for _ in range(80):
        await asyncio.sleep(0.025)
        if await sync_to_async(running_turns, thread_sensitive=False)():
            seen_running = True
            break
    assert seen_running and not answering.done()
    last = (await answering).json()["events"][-1]
    assert last["type"] == "done"
    turn = await Turn.objects.aget()
    assert (turn.pk, turn.status) == (last["turn_id"], "completed")
    assert await ChatMessage.objects.filter(conversation_id=turn.conversation_id).acount() == 2


async def test_a_permission_answering_neither_true_nor_false_is_logged_as_a_misconfiguration(
    settings, caplog
):
    # The reference: permission "denies" on False; a check that forgot to return (None)
    # is a configuration error, never a silent denial.
    def forgot_to_return(user: Any, scope: Any) -> None:
        pass

    configure(settings, permission=forgot_to_return)
    with caplog.at_level("ERROR", logger="chatomon.django.transports.admission"):
        response = await post(AsyncClient(), {"text": "hello"})
    assert response.status_code == 403
    (record,) = caplog.records
    assert "forgot_to_return" in record.getMessage() and "None" in record.getMessage()
