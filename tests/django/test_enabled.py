"""`enabled: False` turns chat off: the mounted routes answer 404, the socket closes, no widget.

The reference's settings table: "enabled | False | Register chat HTTP, SSE, and eligible
WebSocket routes at startup." chatomon's routes are included by the project (the Django
convention), so they stay mounted and refuse instead; the setting is read on every request
and connect through the cached `chat_settings()`, so a changed setting applies at once.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.testing.websocket import WebsocketCommunicator
from django.template import Context, Template
from django.test import AsyncClient, override_settings

from chatomon.django.audit.signals import chat_error
from chatomon.django.models import Conversation, Turn
from chatomon.django.transports.websocket import CLOSE_DISABLED
from tests.asgi_app.fixtures import configure
from tests.asgi_app.project import chatomon

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("chat_project", "close_worker_connections"),
]
ROUTES = ("/chat/", "/chat/stream/", "/chat/confirm/")
MESSAGE = {"text": "hello"}
CONFIRM = {"confirmation_id": "call-1", "confirmed": True}


async def post(client: AsyncClient, path: str, **extra: Any) -> Any:
    payload = CONFIRM if path.endswith("confirm/") else MESSAGE
    return await client.post(path, json.dumps(payload), content_type="application/json", **extra)


@pytest.mark.parametrize("path", ROUTES)
@pytest.mark.parametrize("method", ["post", "get", "put"])
async def test_every_chat_route_is_a_404_for_every_method_while_disabled(settings, path, method):
    """The reference registers no route while `enabled` is False: nothing answers there."""
    configure(settings, enabled=False)
    client = AsyncClient()
    if method == "post":
        response = await post(client, path)
    else:
        response = await getattr(client, method)(path)
    assert response.status_code == 404
    assert await Turn.objects.acount() == 0
    assert await Conversation.objects.acount() == 0
    assert "sessionid" not in client.cookies  # no owner was made: the view never ran


@pytest.mark.parametrize("path", ROUTES)
async def test_a_disabled_route_is_a_404_before_the_csrf_check_which_still_guards_it_when_on(
    settings, path
):
    """An unregistered route is a 404 whatever the request; the reference's "CSRF rejection
    and non-POST HTTP methods use Django's standard HTTP 403 and 405 responses" holds again
    once chat is on."""
    client = AsyncClient(enforce_csrf_checks=True)
    configure(settings, enabled=False)
    assert (await post(client, path)).status_code == 404
    configure(settings, enabled=True)
    refused = await post(client, path)
    assert refused.status_code == 403 and b"CSRF" in refused.content


async def test_the_setting_is_read_at_request_time(settings):
    """Turning chat off (or on again) applies to the next request, with no URLconf change."""
    client = AsyncClient()
    assert (await post(client, "/chat/")).status_code == 200
    configure(settings, enabled=False)
    assert (await post(client, "/chat/")).status_code == 404
    configure(settings, enabled=True)
    answered = await post(client, "/chat/")
    assert answered.status_code == 200 and answered.json()["answer"] == "Echo: hello"


async def test_a_socket_closes_with_4404_while_disabled_and_builds_no_provider(settings):
    """No WebSocket route in the reference while disabled; chatomon's closes with 4404.

    The provider is not built: a provider that cannot even be imported gives the 4404, not
    the reference's startup failure ("A WebSocket startup failure closes with 1011").
    """
    errors: list[dict[str, Any]] = []

    def receiver(**kwargs: Any) -> None:
        errors.append(kwargs)

    from chatomon.django.routing import chat_websocket_application  # noqa: PLC0415

    configure(settings, enabled=False, provider="tests.asgi_app.providers.MissingProvider")
    socket = WebsocketCommunicator(
        chat_websocket_application(), "/chat/", headers=[(b"origin", b"http://testserver")]
    )
    chat_error.connect(receiver)
    try:
        assert (await socket.connect())[0]
        assert await socket.receive_output() == {"type": "websocket.close", "code": 4404}
    finally:
        chat_error.disconnect(receiver)
    assert CLOSE_DISABLED == 4404
    assert errors == []


async def test_a_socket_opens_again_once_chat_is_on(settings):
    """The setting is read on each connect: the same route serves a turn when enabled."""
    from chatomon.django.routing import chat_websocket_application  # noqa: PLC0415

    def open_socket() -> WebsocketCommunicator:
        return WebsocketCommunicator(
            chat_websocket_application(), "/chat/", headers=[(b"origin", b"http://testserver")]
        )

    configure(settings, enabled=False)
    closed = open_socket()
    assert (await closed.connect())[0]
    assert await closed.receive_output() == {"type": "websocket.close", "code": CLOSE_DISABLED}
    configure(settings, enabled=True)
    socket = open_socket()
    assert (await socket.connect())[0]
    await socket.send_to(text_data=json.dumps({"type": "message", "text": "hi"}))
    assert json.loads(await socket.receive_from(5))["type"] == "text_chunk"
    await socket.disconnect()


def render_widget(source: str) -> str:
    return Template("{% load chatomon_widget %}" + source).render(Context())


@pytest.mark.parametrize(
    "tag", ["{% chatomon_chat_widget %}", "{% chatomon_chat_widget endpoint='/c/' %}"]
)
def test_the_widget_renders_nothing_while_disabled_and_the_page_around_it_as_usual(tag):
    """A widget on a page would offer a chat whose routes answer 404; the page stays whole."""
    with override_settings(CHATOMON=chatomon(enabled=False), STATIC_URL="/static/"):
        assert render_widget("<p>before</p>" + tag + "<p>after</p>") == "<p>before</p><p>after</p>"
    with override_settings(CHATOMON=chatomon(), STATIC_URL="/static/"):
        assert "data-chatomon-chat" in render_widget(tag)
