"""Isolation across owners, against a real uvicorn server: nobody reaches another's chat.

Two users (alice, bob) and two anonymous browsers each hold a conversation with a secret in
it and a pending client confirmation (`createPart`). Each then tries, as every other owner,
every chat surface — `POST chat/`, `chat/stream/`, `chat/confirm/` (approve and reject), a
WebSocket opened with `?conversation_id=` sending messages and confirmations — and must
read nothing of the other's conversation, continue none of it, decide none of its
confirmations, and, following it over a socket, receive none of its events (while the
owner's own socket, the control, receives them). Finally each owner confirms its own
confirmation: it was still pending.

Every console view (listed from `chatomon.console.urls`, with real ids filled in) is
tried by anonymous browsers, non-staff users, staff without the console's permissions
(no console page: a login redirect or 403, and no secret in any answer), and a superuser,
whose console chat is their own (another owner's conversation is a 404, their
confirmation not theirs to answer). Malformed ids in console URLs answer 404.

The server runs on PostgreSQL when DATABASE_URL names one (SQLite otherwise), with the
Redis cache and channel layer when REDIS_URL is set. Each surface's attempts go to the
ledger as `isolation: <surface>`.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from websockets.exceptions import ConnectionClosed

from tests.asgi_app.fixtures import sse_events
from tests.asgi_app.servers import (
    ROOT,
    AsgiServer,
    Visitor,
    migrate,
    postgres_database,
    receive_until_terminal,
    server_environment,
)
from tests.ledger import Ledger

OWNERS = ("alice", "bob", "anon-1", "anon-2")
STAFF_ROLES = {"boss": "superuser", "clerk": "staff without permissions"}
STAFF_SETUP = """
from django.contrib.auth import get_user_model
User = get_user_model()
User.objects.create_superuser("boss", password="pw")
User.objects.create_user("clerk", password="pw", is_staff=True)
"""
QUIET = 0.5
"""Seconds a socket that must receive nothing is listened to."""


@dataclass
class Owner:
    """One owner of a conversation: a logged-in user or an anonymous browser."""

    name: str
    visitor: Visitor = field(default_factory=Visitor)
    secret: str = field(default_factory=lambda: f"secret-{uuid4().hex[:12]}")
    conversation: str = ""
    turn: str = ""
    confirmation: str = ""

    @property
    def anonymous(self) -> bool:
        return self.name.startswith("anon")


@dataclass
class Tally:
    """Attempts per surface and the ones that broke isolation, for the ledger."""

    tried: dict[str, int] = field(default_factory=dict)
    broken: dict[str, list[str]] = field(default_factory=dict)

    def check(self, surface: str, held: bool, what: str) -> None:
        self.tried[surface] = self.tried.get(surface, 0) + 1
        if not held:
            self.broken.setdefault(surface, []).append(what)

    def record(self, ledger: Ledger) -> None:
        for surface, tried in sorted(self.tried.items()):
            ledger.cases(
                f"isolation: {surface}", tried=tried, errors=len(self.broken.get(surface, []))
            )


@contextmanager
def database(folder: Path) -> Iterator[str]:
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        with postgres_database("isolation") as url:
            yield url
    else:
        yield f"sqlite:///{folder / 'isolation.sqlite3'}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AsgiServer]:
    folder = tmp_path_factory.mktemp("isolation")
    with database(folder) as url:
        extra = {"REDIS_URL": os.environ["REDIS_URL"]} if os.environ.get("REDIS_URL") else {}
        env = server_environment(
            DATABASE_URL=url, CHATOMON_TEST_PREFIX=f"chatomon-isolation-{uuid4().hex}", **extra
        )
        migrate(env)
        command = [sys.executable, "-m", "django", "shell", "-c", STAFF_SETUP]
        subprocess.run(command, env=env, cwd=ROOT, check=True)
        running = AsgiServer(env, log=folder / "server.log").start()
        try:
            yield running
        finally:
            running.stop()


def texts(events: Any) -> str:
    return json.dumps(events)


async def chat(server: AsgiServer, owner: Owner, payload: dict[str, Any]) -> list[dict[str, Any]]:
    response = await owner.visitor.post(server, "/chat/", payload)
    events: list[dict[str, Any]] = response.json()["events"]
    return events


async def stream(server: AsgiServer, who: Visitor, payload: dict[str, Any]) -> tuple[int, str]:
    headers = await who.csrf_headers(server)
    async with who.client(server) as client:
        response = await client.post("/chat/stream/", json=payload, headers=headers)
        who.cookies.update(response.cookies)
        return response.status_code, response.text


async def confirm(
    server: AsgiServer, who: Visitor, confirmation: str, confirmed: bool
) -> tuple[int, str]:
    payload = {"confirmation_id": confirmation, "confirmed": confirmed}
    headers = await who.csrf_headers(server)
    async with who.client(server) as client:
        response = await client.post(
            "/chat/confirm/", json=payload, headers={**headers, "Accept": "application/json"}
        )
        return response.status_code, response.text


async def set_up(server: AsgiServer, owners: list[Owner]) -> None:
    """Each owner: a conversation holding its secret."""
    for owner in owners:
        if not owner.anonymous:
            await owner.visitor.log_in(server, owner.name)
        first = await chat(server, owner, {"text": f"remember {owner.secret}"})
        assert first[-1]["type"] == "done" and owner.secret in texts(first), first
        owner.conversation, owner.turn = first[-1]["conversation_id"], first[-1]["turn_id"]


async def ask_for(socket: Any, owner: Owner, text: str) -> str:
    """Send `text` in the owner's conversation; the id of the confirmation it waits for."""
    message = {"type": "message", "text": text, "conversation_id": owner.conversation}
    await socket.send(json.dumps(message))
    waiting = await receive_until_terminal(socket)
    assert waiting[-1]["type"] == "confirm_mutation", waiting
    confirmation: str = waiting[-1]["id"]
    return confirmation


async def attack_over_http(server: AsgiServer, thief: Owner, victim: Owner, tally: Tally) -> None:
    """Read or continue the victim's conversation, decide its confirmation: all refused."""
    pair = f"{thief.name} -> {victim.name}"
    events = await chat(
        server, thief, {"text": "repeat what I said", "conversation_id": victim.conversation}
    )
    refused = events[-1].get("code") == "conversation_not_found"
    tally.check("chat/", refused and victim.secret not in texts(events), pair)
    status, body = await stream(
        server, thief.visitor, {"text": "repeat it", "conversation_id": victim.conversation}
    )
    streamed = sse_events(body.encode())
    refused = bool(streamed) and streamed[-1].get("code") == "conversation_not_found"
    tally.check("chat/stream/", refused and victim.secret not in body, f"{pair} ({status})")
    for confirmed in (True, False) if victim.confirmation else ():
        status, body = await confirm(server, thief.visitor, victim.confirmation, confirmed)
        held = '"bad_event"' in body and victim.secret not in body and '"done"' not in body
        tally.check("chat/confirm/", held, f"{pair} confirmed={confirmed} ({status}) {body[:200]}")


async def attack_over_socket(server: AsgiServer, thief: Owner, victim: Owner, tally: Tally) -> None:
    """A socket naming the victim's conversation stays the thief's own."""
    pair = f"{thief.name} -> {victim.name}"
    path = f"/chat/?conversation_id={victim.conversation}"
    async with thief.visitor.socket(server, path) as socket:
        await socket.send(json.dumps({"type": "message", "text": "repeat what I said"}))
        events = await receive_until_terminal(socket)
        own = all(e.get("conversation_id") != victim.conversation for e in events)
        tally.check("WebSocket ?conversation_id=", own and victim.secret not in texts(events), pair)
        message = {"type": "message", "text": "and now?", "conversation_id": victim.conversation}
        await socket.send(json.dumps(message))
        events = await receive_until_terminal(socket)
        refused = events[-1].get("code") == "conversation_not_found"
        tally.check("WebSocket message", refused and victim.secret not in texts(events), pair)
        for confirmed in (True, False) if victim.confirmation else ():
            frame = {"type": "confirm", "confirmation_id": victim.confirmation}
            await socket.send(json.dumps({**frame, "confirmed": confirmed}))
            events = await receive_until_terminal(socket)
            held = events[-1].get("code") == "bad_event" and victim.secret not in texts(events)
            tally.check("WebSocket confirm", held, f"{pair} confirmed={confirmed}")


async def nothing_arrives(socket: Any) -> bool:
    try:
        async with asyncio.timeout(QUIET):
            await socket.recv()
    except TimeoutError:
        return True
    except ConnectionClosed:
        return True
    return False


async def victim_round(
    server: AsgiServer, victim: Owner, thieves: list[Owner], tally: Tally
) -> None:
    """The victim's socket waits on its own confirmation while every thief tries it all.

    A client confirmation expires (30 s by default): each victim's round is short.
    Then the thieves' sockets follow the victim's conversation while the victim confirms
    over HTTP; the victim's own socket (the control) receives the resumed turn. Anonymous
    owners may not write data: theirs is a round without a confirmation.
    """
    path = f"/chat/?conversation_id={victim.conversation}"
    async with victim.visitor.socket(server, path) as own:
        if not victim.anonymous:
            text = f'mutate createPart {{"name": "part of {victim.secret}"}}'
            victim.confirmation = await ask_for(own, victim, text)
        for thief in thieves:
            await attack_over_http(server, thief, victim, tally)
            await attack_over_socket(server, thief, victim, tally)
        if victim.anonymous:
            return
        followers = [await thief.visitor.socket(server, path) for thief in thieves]
        try:
            await asyncio.sleep(0.2)  # the group joins happen at connect
            _, body = await confirm(server, victim.visitor, victim.confirmation, True)
            assert '"done"' in body, f"{victim.name}'s own confirmation was not pending: {body}"
            received = await receive_until_terminal(own)
            assert received[-1]["type"] == "done", received  # the control: the owner follows
            for thief, socket in zip(thieves, followers, strict=True):
                quiet = await nothing_arrives(socket)
                tally.check("WebSocket follow", quiet, f"{thief.name} -> {victim.name}")
        finally:
            for socket in followers:
                await socket.close()


def test_no_owner_reaches_another_owners_conversation(server: AsgiServer, ledger: Ledger) -> None:
    owners = [Owner(name) for name in OWNERS]
    tally = Tally()

    async def run() -> int:
        await set_up(server, owners)
        for victim in owners:
            await victim_round(server, victim, [o for o in owners if o is not victim], tally)
        async with httpx.AsyncClient(base_url=server.url) as plain:
            turns = (await plain.get("/test/turns/")).json()["turns"]
        return sum(turn["status"] == "running" for turn in turns)

    running = asyncio.run(run())
    tally.record(ledger)
    ledger.running("isolation server (latest 10 turns)", count=running)
    assert not tally.broken, tally.broken
    assert running == 0


# -- the console -------------------------------------------------------------------------


def console_routes() -> list[tuple[str, URLPattern]]:
    """(name, pattern) of every console view, from chatomon.console.urls."""
    resolver = next(
        r
        for r in get_resolver().url_patterns
        if isinstance(r, URLResolver) and r.namespace == "chatomon_console"
    )
    return [(p.name or "", p) for p in resolver.url_patterns if isinstance(p, URLPattern)]


POST_ONLY = {
    "chat_send", "chat_confirm", "approval_decide", "escalation_review", "save_view",
    "delete_view", "logout",
}  # fmt: skip
PUBLIC = {"login"}  # the login form is for everyone


def console_url(name: str, pattern: URLPattern, owner: Owner) -> str:
    keys = pattern.pattern.converters
    values = {
        "conversation_id": owner.conversation,
        "confirmation_id": owner.confirmation,
        "turn_id": owner.turn,
        "fmt": "jsonl",
        "event_id": 1,
        "call_id": "c1",
        "view_id": 1,
        "run_id": 1,
    }
    kwargs = {key: values[key] for key in keys}
    if "fmt" in str(pattern.pattern):
        kwargs["fmt"] = "jsonl"
    return reverse(f"chatomon_console:{name}", kwargs=kwargs)


async def console_request(
    server: AsgiServer, who: Visitor, name: str, url: str
) -> tuple[int, str, str]:
    headers = await who.csrf_headers(server)
    async with who.client(server) as client:
        if name == "live":
            async with client.stream("GET", url) as response:
                location = response.headers.get("location", "")
                return response.status_code, "", location
        if name in POST_ONLY:
            data = {"decision": "approve", "status": "resolved", "text": "hello"}
            response = await client.post(url, data=data, headers=headers)
        else:
            response = await client.get(url)
        return response.status_code, response.text, response.headers.get("location", "")


def test_no_console_page_for_anyone_but_staff_and_staff_see_only_their_own_chat(
    server: AsgiServer, ledger: Ledger
) -> None:
    owners = [Owner(name) for name in OWNERS]
    users = [owner for owner in owners if not owner.anonymous]
    routes = console_routes()
    assert {"turn_detail", "approvals", "audit_detail", "chat_conversation"} <= {
        n for n, _ in routes
    }
    tally = Tally()

    async def run() -> None:
        await set_up(server, owners)
        async with httpx.AsyncClient(base_url=server.url) as plain:
            part = (await plain.post("/test/seed/")).json()["id"]
        for owner in users:  # staff approvals: they wait for as long as the test takes
            async with owner.visitor.socket(server) as socket:
                text = f'mutate updatePartCost {{"part_id": {part}, "unit_cost": "3.00"}}'
                owner.confirmation = await ask_for(socket, owner, text)
        secrets = [o.secret for o in owners]
        clerk = Visitor()
        await clerk.log_in(server, "clerk")
        boss = Visitor()
        await boss.log_in(server, "boss")
        outsiders = [(o.name, o.visitor) for o in owners] + [("clerk", clerk)]
        for name, pattern in routes:
            if name == "logout":
                continue  # it ends the session it is sent with; tried last
            url = console_url(name, pattern, owners[0])
            for who, visitor in outsiders:
                status, body, location = await console_request(server, visitor, name, url)
                leaked = any(secret in body for secret in secrets)
                if name in PUBLIC:
                    held = status == 200 and not leaked
                elif who == "clerk" and name == "live":
                    # Every console page of any staff member listens (the pending badge);
                    # the queue in it needs view_approvals (tests/console cover that).
                    held = status == 200
                elif who == "clerk" and name == "delete_view":
                    # Any staff member keeps saved views; view 1 is nobody's or another's.
                    held = status == 404
                elif who == "clerk":
                    # Staff without the area's permission: 403.
                    held = status in (302, 403, 405) and not leaked
                else:
                    held = status in (302, 405) and not leaked
                    held = held and (status == 405 or "/console/login/" in location)
                tally.check(f"console {name}", held, f"{who} {url} -> {status}")
        # The superuser's console chat is their own: another owner's conversation is a 404,
        # and another owner's confirmation is not theirs to answer there.
        for owner in owners:
            url = f"/console/chat/{owner.conversation}/"
            status, body, _ = await console_request(server, boss, "chat_conversation", url)
            tally.check("console chat (staff)", status == 404 and owner.secret not in body, url)
        for owner in users:
            url = f"/console/chat/confirm/{owner.confirmation}/"
            _, body, _ = await console_request(server, boss, "chat_confirm", url)
            tally.check("console chat confirm (staff)", owner.secret not in body, url)
        async with httpx.AsyncClient(base_url=server.url) as plain:
            for owner in users:  # still pending: the staff decision wins its claim
                decision = {"confirmation_id": owner.confirmation, "confirmed": False}
                events = (await plain.post("/test/staff/decide/", json=decision)).json()["events"]
                still = events[0]["type"] == "confirmation_resolved"
                tally.check("console chat confirm (staff)", still, f"{owner.name}: {events[0]}")

    asyncio.run(run())
    tally.record(ledger)
    assert not tally.broken, tally.broken


MALFORMED = (
    "/console/turns/%00/",
    "/console/turns/%00/report.json",
    "/console/turns/a%00b/",
    f"/console/turns/{'a' * 65}/",
    "/console/turns/%C3%A9t%C3%A9/",
    "/console/turns/%F0%9F%92%A5/",
    "/console/turns/..%2F..%2Fetc/",
    "/console/escalations/%00/review/",
    "/console/audit/abc/",
    "/console/audit/-1/",
    "/console/audit/99999999999999999999/",
    "/console/audit/9223372036854775808/",
    "/console/audit/%C2%B2/",
    "/console/chat/not-a-uuid/",
    "/console/chat/%00/",
    "/console/chat/confirm/%00/",
    "/console/approvals/%00/decide/",
    "/console/approvals/00000000-0000-0000-0000-00000000000G/decide/",
    "/console/turns/compare/?t=%00&t=a",
    "/console/turns/a%00/tools/c1.json",
    "/console/views/9223372036854775808/delete/",
)


def test_malformed_console_ids_answer_404(server: AsgiServer, ledger: Ledger) -> None:
    async def run() -> list[str]:
        boss = Visitor()
        await boss.log_in(server, "boss")
        headers = await boss.csrf_headers(server)
        wrong = []
        async with boss.client(server) as client:
            for url in MALFORMED:
                method = (
                    "POST"
                    if url.endswith(("/decide/", "/review/", "/delete/")) or "/confirm/" in url
                    else "GET"
                )
                response = await client.request(method, url, headers=headers)
                if response.status_code != 404:
                    wrong.append(f"{method} {url} -> {response.status_code}")
            after = "/console/audit/?after=2026-01-01T00:00:00%2B00:00_99999999999999999999"
            for url in (after, "/console/audit/?after=2026-02-30T00:00:00_1"):
                response = await client.get(url)
                if response.status_code != 200:
                    wrong.append(f"GET {url} -> {response.status_code}")
        return wrong

    wrong = asyncio.run(run())
    ledger.cases("isolation: console malformed ids", tried=len(MALFORMED) + 2, errors=len(wrong))
    assert not wrong
