"""The widget's sessions answer with the reference's codes, as every other surface does.

Reference (error codes): "bad_event | Confirmation HTTP, WebSocket | The event shape,
confirmation payload, or confirmation ID is invalid." and "confirmation_unavailable |
WebSocket | Durable confirmation state was already claimed, resolved, or expired."
"""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import uuid4

import pytest

from chatomon import Atom
from chatomon.chat.events import ConfirmMutation
from chatomon.chat.store import MemoryStore
from chatomon.data.actor import SimpleActor
from chatomon.errors import ProviderTimeoutError
from chatomon.notebook.targets import AtomSession, ServiceSession
from chatomon.providers import ProviderNucleus, ScriptedProvider
from tests.chat.services import RENAME, confirm_settings, service

USER = SimpleActor(id=7, is_authenticated=True)
OTHER = SimpleActor(id=8, is_authenticated=True)


async def events_of(stream: Any) -> list[dict[str, Any]]:
    return [event async for event in stream]


def pending(call_id: str) -> ConfirmMutation:
    return ConfirmMutation(id=call_id, mutation="renameMaterial", input={"name": "Iron"})


async def test_an_atom_session_refuses_an_unknown_id_as_bad_event() -> None:
    session = AtomSession(Atom("a", nucleus=lambda messages, guidance: "ok"))
    (refused,) = await events_of(session.decide({"id": "call-9"}, True))
    assert (refused["type"], refused["code"]) == ("error", "bad_event")


async def test_an_atom_session_refuses_a_decided_id_as_unavailable() -> None:
    session = AtomSession(Atom("a", nucleus=lambda messages, guidance: "ok"))
    waiting = asyncio.ensure_future(session.confirm(pending("call-1")))
    await asyncio.sleep(0)  # the confirmer is now waiting for the decision
    (resolved,) = await events_of(session.decide({"id": "call-1"}, True))
    assert resolved["type"] == "confirmation_resolved" and await waiting is True
    (again,) = await events_of(session.decide({"id": "call-1"}, False))
    assert (again["type"], again["code"]) == ("error", "confirmation_unavailable")


async def test_an_atom_session_refuses_a_dropped_id_as_unavailable() -> None:
    session = AtomSession(Atom("a", nucleus=lambda messages, guidance: "ok"))
    waiting = asyncio.ensure_future(session.confirm(pending("call-2")))
    await asyncio.sleep(0)
    session.cancel_waiting()  # the widget's Stop
    (refused,) = await events_of(session.decide({"id": "call-2"}, True))
    assert refused["code"] == "confirmation_unavailable"
    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_a_failed_atom_turn_gets_the_public_code() -> None:
    # Reference: "public_chat_error(exc) ... maps a plain TimeoutError to
    # deadline_exceeded"; a provider timeout is one.
    provider = ScriptedProvider([ProviderTimeoutError("slow", provider="scripted")])
    session = AtomSession(Atom("a", ProviderNucleus(provider)))
    (failed,) = await events_of(session.turn("hi"))
    assert (failed["type"], failed["code"]) == ("error", "deadline_exceeded")


async def test_a_service_session_gets_bad_event_for_an_unknown_or_foreign_id() -> None:
    chat = service(MemoryStore(), ScriptedProvider([[RENAME]]), settings=confirm_settings())
    asker = ServiceSession(chat, USER)
    asked = await events_of(asker.turn("Rename steel"))
    confirmation = asked[-1]
    assert confirmation["type"] == "confirm_mutation"
    stranger = ServiceSession(chat, OTHER)
    (foreign,) = await events_of(stranger.decide(confirmation, True))
    (unknown,) = await events_of(asker.decide({**confirmation, "id": str(uuid4())}, True))
    assert foreign["code"] == unknown["code"] == "bad_event"
