"""An Atom's own turn in the notebook speaks the pipeline's wire forms, redacted alike.

`confirm_mutation` has one shape and one builder (`chatomon.chat.pipeline.wire`): the
same keys whether a ChatService stored the confirmation or an Atom's tool loop asks its
confirmer with no store, and the same redaction of inputs, previews and tool payloads.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from chatomon import Atom, PIIGuard
from chatomon.chat.loop import ToolLoop
from chatomon.chat.pipeline.wire import confirmation_event
from chatomon.chat.store import MemoryStore
from chatomon.chat.store.records import NewConfirmation, Owner
from chatomon.chat.tools.context import ToolSettings
from chatomon.data.actor import SimpleActor
from chatomon.notebook.targets import AtomSession
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import tool_call
from tests.chat.services import confirm_settings, service

SECRET = "Bearer abcdefgh12345678"
RENAME_TO_SECRET = tool_call(
    "mutate", {"mutation": "renameMaterial", "input": {"material_id": 1, "name": SECRET}}
)


async def a_stored_confirmation_event() -> dict[str, Any]:
    """The `confirm_mutation` a ChatService sends for a stored confirmation."""
    store = MemoryStore()
    owner = Owner.user(1)
    conversation = await store.create_conversation(owner)
    turn = await store.start_turn(owner, conversation.id)
    stored = await store.suspend_turn(
        owner,
        conversation.id,
        turn.id,
        items=[],
        confirmation=NewConfirmation(
            call_id="call-1",
            mutation="renameMaterial",
            input={"material_id": 1},
            preview=None,
            approver="client",
            expires_at=datetime.now(UTC) + timedelta(minutes=5),
            state={},
        ),
    )
    return confirmation_event(stored, stored.preview)


async def test_an_atom_turn_asks_and_answers_in_the_pipelines_shapes() -> None:
    log: list[dict[str, Any]] = []
    toolset = service(
        MemoryStore(), ScriptedProvider([]), log=log, settings=confirm_settings()
    ).toolset
    provider = ScriptedProvider([[RENAME_TO_SECRET], ["Renamed."]])
    loop = ToolLoop(provider, toolset, actor=SimpleActor(id=3))
    session = AtomSession(Atom("data", loop))
    loop.confirmer = session.confirm
    events: list[dict[str, Any]] = []

    async def consume() -> None:
        async for event in session.turn("Rename material 1"):
            events.append(event)  # noqa: PERF401 - read while the turn runs

    task = asyncio.ensure_future(consume())
    answered: dict[str, Any] = {}
    for _ in range(200):  # until the loop waits on the session's confirmer, as a click does
        await asyncio.sleep(0.01)
        asked = next((event for event in events if event["type"] == "confirm_mutation"), None)
        if asked is not None:
            (answered,) = [event async for event in session.decide(asked, approved=True)]
            if answered["type"] == "confirmation_resolved":
                break
    assert answered.get("type") == "confirmation_resolved", (answered, events)
    await asyncio.wait_for(task, 5)

    asked = next(event for event in events if event["type"] == "confirm_mutation")
    assert asked.keys() == (await a_stored_confirmation_event()).keys()
    call = next(event for event in events if event["type"] == "tool_call")
    assert asked["id"] == asked["call_id"] == call["id"]
    assert (asked["expires_at"], asked["conversation_id"]) == (None, None)
    assert asked["input"] == {"material_id": 1, "name": "Bearer [redacted]"}
    assert SECRET not in repr(events)  # the call's arguments and the result, redacted too
    assert answered == {
        "type": "confirmation_resolved",
        "id": call["id"],
        "status": "approved",
        "mutation": "renameMaterial",
        "decided_by": "you",
        "reason": None,
    }
    assert log == [{"material_id": 1, "name": SECRET}]  # the write got the real input
    assert events[-1]["type"] == "done"


async def test_an_atom_turn_hides_what_its_orbitals_hide_and_ends_as_a_service_turn() -> None:
    email = "ada@example.com"
    rename = tool_call(
        "mutate", {"mutation": "renameMaterial", "input": {"material_id": 1, "name": email}}
    )
    log: list[dict[str, Any]] = []
    allowed = ToolSettings(allowed_mutations=["renameMaterial"])  # no confirmation asked
    toolset = service(MemoryStore(), ScriptedProvider([]), log=log, settings=allowed).toolset
    loop = ToolLoop(ScriptedProvider([[rename], ["Renamed."]]), toolset, actor=SimpleActor(id=3))
    guard = PIIGuard(mode="redact", side="output")
    session = AtomSession(Atom("data", loop, output=[guard]))
    events = [event async for event in session.turn("Rename material 1")]

    assert email not in repr([{k: v for k, v in e.items() if k != "report"} for e in events])
    assert "[email removed]" in repr(events)  # the record filter of the atom's PIIGuard
    assert log == [{"material_id": 1, "name": email}]  # the write got the real input
    served = [e async for e in service(MemoryStore(), ScriptedProvider([["Hi"]])).run_turn(
        SimpleActor(id=3), "Hello"
    )]  # fmt: skip
    done = events[-1]
    assert done.keys() - {"report"} == served[-1].keys()
    assert (done["conversation_id"], done["reply"]) == (None, "Renamed.")
