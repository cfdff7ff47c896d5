"""Embedding the chat on another site: visitor tokens, CORS, the socket's origin check."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from channels.testing.websocket import WebsocketCommunicator
from django.test import AsyncClient

from chatomon.django.embed import EmbedRefused, check_token, embed_sites, sign_visitor
from chatomon.django.models import Conversation
from chatomon.django.routing import chat_websocket_application
from chatomon.django.settings.checks import check_chat
from chatomon.django.transports.embedding import CLOSE_UNAUTHORIZED, SUBPROTOCOL
from chatomon.errors import ChatConfigurationError
from tests.asgi_app.fixtures import ChatProject, configure, make_user, sse_until

SHOP = "https://shop.example"
KEY = "k" * 40
NOW = 1_700_000_000.0  # 2023: tokens signed then have expired


def shop_user(site: str, subject: str) -> Any:
    """The `user` callable of the "members" site: subject "alice" is the user alice."""
    from django.contrib.auth import get_user_model  # noqa: PLC0415

    return get_user_model().objects.filter(username=subject).first()


def database_away(site: str, subject: str) -> Any:
    """The `user` callable of the "down" site: its database cannot be reached."""
    from django.db import OperationalError  # noqa: PLC0415

    raise OperationalError("connection refused")


def subject_only(subject: str) -> None:
    """A `user` callable that forgot the site argument."""


SITES = {
    "shop": {"key": KEY, "origins": [SHOP]},
    "members": {"key": "m" * 40, "origins": [SHOP], "user": f"{__name__}.shop_user"},
    "down": {"key": "d" * 40, "origins": [SHOP], "user": f"{__name__}.database_away"},
}


@pytest.fixture(autouse=True)
def sites(chat_project: ChatProject) -> None:
    configure(chat_project.settings, embed=SITES)


# Tokens.


def test_a_token_names_its_site_and_subject_until_it_expires():
    token = sign_visitor("shop", "customer-42", expires_in=60, now=NOW)
    assert token.startswith("shop.")
    assert all(c.isalnum() or c in "._-" for c in token)  # fits a WebSocket subprotocol
    visitor = check_token(token, SHOP, now=NOW + 59)
    assert (visitor.site, visitor.subject, visitor.identity) == (
        "shop",
        "customer-42",
        "visitor:shop:customer-42",
    )
    assert check_token(token, None, now=NOW).subject == "customer-42"  # a server sends none


@pytest.mark.parametrize(
    ("token", "origin", "code", "status"),
    [
        (
            sign_visitor("shop", "a", key=KEY, now=NOW),
            "https://evil.example",
            "origin_not_allowed",
            403,
        ),
        (sign_visitor("shop", "a", key="x" * 40, now=NOW), SHOP, "embed_token_invalid", 401),
        (sign_visitor("nowhere", "a", key=KEY, now=NOW), SHOP, "embed_token_invalid", 401),
        (sign_visitor("shop", "a", key=KEY, now=NOW)[:-2] + "xx", SHOP, "embed_token_invalid", 401),
        ("shop", SHOP, "embed_token_invalid", 401),
        ("", SHOP, "embed_token_invalid", 401),
        ("shop.bm90IGpzb24.abc", SHOP, "embed_token_invalid", 401),
    ],
)
def test_a_bad_token_is_refused_with_its_reason(token, origin, code, status):
    with pytest.raises(EmbedRefused) as refused:
        check_token(token, origin, now=NOW + 1)
    assert (refused.value.code, refused.value.status) == (code, status)
    assert refused.value.event()["type"] == "error"


def test_an_expired_token_says_so():
    token = sign_visitor("shop", "a", expires_in=60, now=NOW)
    with pytest.raises(EmbedRefused) as refused:
        check_token(token, SHOP, now=NOW + 60)
    assert refused.value.code == "embed_token_expired"
    assert "reload" in refused.value.message


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"site": "no such"}, "site id"),
        ({"subject": ""}, "subject"),
        ({"expires_in": 0}, "expires_in"),
        ({"expires_in": 86401}, "expires_in"),
        ({"site": "other"}, "no site 'other'"),
    ],
)
def test_sign_visitor_refuses_what_cannot_make_a_token(arguments, message):
    given = {"site": "shop", "subject": "a", **arguments}
    with pytest.raises(ValueError, match=message):
        sign_visitor(given.pop("site"), given.pop("subject"), **given)


@pytest.mark.parametrize(
    ("value", "key", "message"),
    [
        ({"bad site": {"key": KEY, "origins": [SHOP]}}, "['embed']", "site id 'bad site'"),
        ({"a.b": {"key": KEY, "origins": [SHOP]}}, "['embed']", "letters, digits"),
        ({"shop": {"key": "short", "origins": [SHOP]}}, "['shop']['key']", "32 characters"),
        ({"shop": {"key": KEY, "origins": []}}, "['shop']['origins']", "at least one origin"),
        ({"shop": {"key": KEY}}, "['shop']['origins']", "is required"),
        ({"shop": {"key": KEY, "origins": [SHOP + "/"]}}, "['origins'][0]", "host and port only"),
        ({"shop": {"key": KEY, "origins": ["shop.example"]}}, "['origins'][0]", "an origin such"),
        ({"shop": {"key": KEY, "origins": [SHOP], "colour": "red"}}, "['colour']", "unknown"),
        (
            {"shop": {"key": KEY, "origins": [SHOP], "user": "no.such.path"}},
            "['shop']['user']",
            "cannot be imported",
        ),
        (
            {"shop": {"key": KEY, "origins": [SHOP], "user": f"{__name__}.subject_only"}},
            "['shop']['user']",
            "cannot be called with the two arguments (site, subject)",
        ),
        (["shop"], "['embed']", "mapping of site ids to sites"),
        (None, "['embed']", "got None"),
        ({"shop": (KEY, [SHOP])}, "['embed']['shop']", "must be a mapping {'key'"),
    ],
)
def test_a_bad_embed_setting_is_a_clear_settings_error(settings, value, key, message):
    configure(settings, embed=value)
    with pytest.raises(ChatConfigurationError, match=re.escape(message)) as raised:
        embed_sites()
    assert "CHATOMON['embed']" in str(raised.value)
    assert key in str(raised.value)
    (error,) = check_chat()
    assert error.id == "chatomon.E002"
    assert message in error.msg


@pytest.mark.parametrize(
    "embed",
    [
        {"shop": {"key": "s3cret-but-too-short", "origins": [SHOP]}},
        {"shop": {"key": "s3cret-but-too-short" * 2, "origins": ["shop.example"]}},
        {"shop": ("s3cret-but-too-short", [SHOP])},
        [{"key": "s3cret-but-too-short", "origins": [SHOP]}],
    ],
)
def test_an_embed_error_never_shows_a_sites_key(settings, embed):
    configure(settings, embed=embed)
    with pytest.raises(ChatConfigurationError) as raised:
        embed_sites()
    assert "s3cret" not in str(raised.value)
    assert "s3cret" not in repr(raised.value.value)
    assert all("s3cret" not in message.msg for message in check_chat())


def test_a_valid_embed_setting_is_read_and_passes_the_checks():
    sites = embed_sites()
    assert sorted(sites) == ["down", "members", "shop"]
    assert sites["shop"].origins == (SHOP,)
    assert sites["shop"].user is None
    assert sites["members"].user is shop_user  # the dotted path, resolved
    assert [m for m in check_chat() if m.is_serious()] == []


def test_without_embed_no_site_is_known(settings):
    configure(settings)
    assert embed_sites() == {}
    with pytest.raises(EmbedRefused) as refused:
        check_token(sign_visitor("shop", "a", key=KEY), SHOP)
    assert refused.value.code == "embed_token_invalid"


# HTTP and SSE.


def bearer(site: str = "shop", subject: str = "customer-42") -> str:
    return "Bearer " + sign_visitor(site, subject)


async def post(path: str, payload: Any, **headers: str) -> Any:
    client = AsyncClient(enforce_csrf_checks=True)
    body = json.dumps(payload)
    return await client.post(path, body, content_type="application/json", headers=headers)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections")
async def test_a_cross_site_request_without_a_token_is_refused_readably():
    response = await post("/chat/", {"text": "hi"}, Origin=SHOP)
    assert response.status_code == 401
    (event,) = response.json()["events"]
    assert event["code"] == "embed_token_required"
    assert response["Access-Control-Allow-Origin"] == SHOP  # the page can read why
    assert await Conversation.objects.acount() == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections")
async def test_the_preflight_allows_the_token_header():
    client = AsyncClient()
    response = await client.options(
        "/chat/stream/",
        headers={"Origin": SHOP, "Access-Control-Request-Headers": "authorization,content-type"},
    )
    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == SHOP
    assert "Authorization" in response["Access-Control-Allow-Headers"]
    assert "POST" in response["Access-Control-Allow-Methods"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections")
async def test_a_visitor_chats_without_csrf_as_an_owner_of_its_own():
    response = await post("/chat/", {"text": "hello"}, Origin=SHOP, Authorization=bearer())
    assert response.status_code == 200
    assert response.json()["answer"] == "Echo: hello"
    assert response["Access-Control-Allow-Origin"] == SHOP
    assert "sessionid" not in response.cookies
    conversation = await Conversation.objects.aget()
    assert conversation.owner_kind == "session"
    # The same subject finds it again; another subject of the site does not.
    again = await AsyncClient().get(
        "/chat/history/", headers={"Origin": SHOP, "Authorization": bearer()}
    )
    assert [i["content"] for i in again.json()["items"]] == ["hello", "Echo: hello"]
    other = await AsyncClient().get(
        "/chat/history/", headers={"Origin": SHOP, "Authorization": bearer(subject="someone")}
    )
    assert other.json()["items"] == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections")
async def test_a_token_from_another_origin_or_expired_is_refused():
    refused = await post(
        "/chat/", {"text": "x"}, Origin="https://evil.example", Authorization=bearer()
    )
    assert (refused.status_code, refused.json()["events"][0]["code"]) == (403, "origin_not_allowed")
    stale = "Bearer " + sign_visitor("shop", "a", now=NOW)
    expired = await post("/chat/stream/", {"text": "x"}, Origin=SHOP, Authorization=stale)
    assert expired.status_code == 401
    assert b"embed_token_expired" in expired.content
    history = await AsyncClient().get("/chat/history/", headers={"Origin": SHOP})
    assert (history.status_code, history.json()["code"]) == (401, "embed_token_required")
    assert await Conversation.objects.acount() == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections")
async def test_a_token_wins_over_the_session_cookie():
    client = AsyncClient(enforce_csrf_checks=True)
    await client.aforce_login(await make_user("bob"))
    response = await client.post(
        "/chat/",
        json.dumps({"text": "who am i"}),
        content_type="application/json",
        headers={"Origin": SHOP, "Authorization": bearer()},
    )
    assert response.status_code == 200
    assert (await Conversation.objects.aget()).owner_kind == "session"
    # The visitor's session is stored nowhere: no session cookie is set or replaced.
    assert "sessionid" not in response.cookies


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections")
async def test_a_site_mapping_visitors_to_users_lets_them_confirm_over_sse():
    user = await make_user("alice")
    token = bearer("members", "alice")
    response = await post(
        "/chat/stream/",
        {"text": 'mutate createPart {"name": "Bolt"}'},
        Origin=SHOP,
        Authorization=token,
    )
    assert response["Access-Control-Allow-Origin"] == SHOP
    events = await sse_until(response, "confirm_mutation")
    assert events[-1]["approver"] == "client"
    decided = await post(
        "/chat/confirm/",
        {"confirmation_id": events[-1]["id"], "confirmed": True},
        Origin=SHOP,
        Authorization=token,
    )
    assert decided.json()["events"][0]["status"] == "approved"
    conversation = await Conversation.objects.aget()
    assert (conversation.owner_kind, conversation.owner_key) == ("user", str(user.pk))


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections")
async def test_a_sites_user_lookup_without_its_database_is_store_unavailable(caplog):
    for path in ("/chat/", "/chat/stream/"):
        response = await post(path, {"text": "hi"}, Origin=SHOP, Authorization=bearer("down"))
        assert response.status_code == 503
        assert response["Access-Control-Allow-Origin"] == SHOP
        assert b"store_unavailable" in response.content
    assert any("could not read its user" in r.getMessage() for r in caplog.records)
    assert await Conversation.objects.acount() == 0


# WebSocket.


def socket(token: str | None, origin: str = SHOP) -> WebsocketCommunicator:
    protocols = [SUBPROTOCOL] + ([f"chatomon.bearer.{token}"] if token is not None else [])
    return WebsocketCommunicator(
        chat_websocket_application(),
        "/chat/",
        headers=[(b"origin", origin.encode())],
        subprotocols=protocols,
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections")
async def test_a_visitor_socket_is_answered_with_the_chatomon_subprotocol():
    communicator = socket(sign_visitor("shop", "customer-42"))
    connected, protocol = await communicator.connect()
    assert (connected, protocol) == (True, SUBPROTOCOL)
    await communicator.send_json_to({"type": "message", "text": "hi"})
    events = [await communicator.receive_json_from(timeout=5) for _ in range(3)]
    assert [e["type"] for e in events] == ["text_chunk", "text_chunk", "done"]
    await communicator.disconnect()
    conversation = await Conversation.objects.aget()
    assert conversation.owner_kind == "session"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections")
async def test_a_bad_socket_token_is_told_why_and_closed_with_4401():
    communicator = socket(sign_visitor("shop", "a", now=NOW))
    connected, protocol = await communicator.connect()
    assert (connected, protocol) == (True, SUBPROTOCOL)
    event = await communicator.receive_json_from(timeout=5)
    assert event["code"] == "embed_token_expired"
    closed = await communicator.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": CLOSE_UNAUTHORIZED}
    wrong_origin = socket(sign_visitor("shop", "a"), origin="https://evil.example")
    await wrong_origin.connect()
    assert (await wrong_origin.receive_json_from(timeout=5))["code"] == "origin_not_allowed"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections")
async def test_a_cross_site_socket_without_a_token_meets_the_origin_check():
    connected, _ = await socket(None).connect()
    assert not connected


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections")
async def test_a_visitor_socket_whose_user_cannot_be_read_is_closed_1011():
    communicator = socket(sign_visitor("down", "a"))
    assert (await communicator.connect())[0]
    event = await communicator.receive_json_from(timeout=5)
    assert (event["code"], event["reason"]) == ("chat_error", "store_unavailable")
    closed = await communicator.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": 1011}
