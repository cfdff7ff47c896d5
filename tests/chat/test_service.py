"""ChatService: whole turns on both stores — persistence, errors, confirmations, context."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any
from uuid import UUID, uuid4

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from pydantic import BaseModel

from chatomon import Blocklist, TokenUsage
from chatomon.chat.loop import LoopLimits
from chatomon.chat.service import AtomConfig, ChatService, owner_of
from chatomon.chat.store import ConversationStore, MemoryStore, Owner
from chatomon.chat.tools.context import ToolSettings
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.actor import SimpleActor
from chatomon.data.fixtures import toy_registry
from chatomon.data.mutations import mutation
from chatomon.django.store import DjangoStore
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import tool_call

USER = SimpleActor(id=7, is_authenticated=True)
OTHER = SimpleActor(id=8, is_authenticated=True)
STAFF = SimpleActor(id=1, is_authenticated=True, is_staff=True)
RENAME = tool_call(
    "mutate", {"mutation": "renameMaterial", "input": {"material_id": 1, "name": "Iron"}}
)


class Rename(BaseModel):
    material_id: int
    name: str


@pytest.fixture(
    params=["memory", pytest.param("django", marks=pytest.mark.django_db(transaction=True))]
)
def store(request: pytest.FixtureRequest) -> ConversationStore:
    return MemoryStore() if request.param == "memory" else DjangoStore()


@pytest.fixture(autouse=True)
def _close_worker_connections() -> Iterator[None]:
    """Close the connection asgiref's worker thread opened, or the test database stays busy."""
    yield
    asyncio.run(sync_to_async(connections.close_all)())


def service(
    store: ConversationStore,
    provider: ScriptedProvider,
    *,
    log: list[dict[str, Any]] | None = None,
    settings: ToolSettings | None = None,
    **options: Any,
) -> ChatService:
    registry = toy_registry()

    @mutation(name="renameMaterial", input=Rename, manager="MaterialManager")
    def rename(actor: Any, data: Rename) -> dict[str, Any]:
        if log is not None:
            log.append(data.model_dump())
        return {"id": data.material_id, "name": data.name}

    registry.register(rename)
    return ChatService(
        store=store,
        provider=provider,
        toolset=Toolset(registry, settings),
        poll_interval_seconds=0.01,
        **options,
    )


async def collect(events: AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event async for event in events]


async def wait_for(check: Callable[[], Awaitable[Any]], seconds: float = 5.0) -> Any:
    """Poll `check` until it gives a true value."""
    for _ in range(int(seconds / 0.01)):
        value = await check()
        if value:
            return value
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def confirm_settings(*, staff: bool = False) -> ToolSettings:
    names = ["renameMaterial"]
    if staff:
        return ToolSettings(allowed_mutations=names, staff_approval_mutations=names)
    return ToolSettings(allowed_mutations=names, confirm_mutations=names)


async def test_a_plain_answer_is_streamed_persisted_and_recorded(
    store: ConversationStore,
) -> None:
    provider = ScriptedProvider([["Hello ", "there.", TokenUsage(input_tokens=3, output_tokens=2)]])
    chat = service(store, provider, atom_config=AtomConfig(capture_content="hash"))
    events = await collect(chat.run_turn(USER, "Hi"))
    assert [e["type"] for e in events] == ["text_chunk", "text_chunk", "done"]
    done = events[-1]
    conversation_id = done["conversation_id"]
    assert all(e["conversation_id"] == conversation_id for e in events)
    assert done["reply"] == "Hello there."
    assert done["usage"] == {"input_tokens": 3, "output_tokens": 2}
    owner = Owner.user(7)
    stored = await store.messages(owner, UUID(conversation_id))
    assert [(m.item.kind, m.item.content) for m in stored] == [
        ("user", "Hi"),
        ("assistant", "Hello there."),
    ]
    turn = await store.get_turn(done["turn_id"])
    assert turn is not None and turn.status == "completed"
    assert turn.report is not None and turn.report["turn_id"] == done["turn_id"]
    assert turn.report["capture_content"] == "hash"
    assert turn.final_action == "answered"
    assert turn.usage == TokenUsage(input_tokens=3, output_tokens=2)


async def test_a_read_round_stores_the_call_group_and_its_linked_result(
    store: ConversationStore,
) -> None:
    provider = ScriptedProvider(
        [[tool_call("query", {"manager": "PartManager", "fields": ["name"]})], ["Three parts."]]
    )
    events = await collect(service(store, provider).run_turn(USER, "Which parts?"))
    assert [e["type"] for e in events] == ["tool_call", "tool_result", "text_chunk", "done"]
    assert events[1]["result"]["total_count"] == 3
    stored = await store.messages(Owner.user(7), UUID(events[-1]["conversation_id"]))
    kinds = [m.item.kind for m in stored]
    assert kinds == ["user", "tool_calls", "tool_result", "assistant"]
    assert stored[1].item.tool_calls[0].id == stored[2].item.call_id == events[0]["id"]
    assert stored[2].item.result["total_count"] == 3


async def test_a_loop_limit_gives_its_code_and_an_aborted_turn(store: ConversationStore) -> None:
    provider = ScriptedProvider([[tool_call("query", {"manager": "PartManager"})]])
    chat = service(store, provider, limits=LoopLimits(max_total_rounds_per_message=1))
    events = await collect(chat.run_turn(USER, "Which parts?"))
    error = events[-1]
    assert error["type"] == "error" and error["code"] == "turn_limit"
    assert error["message"] == "This message reached its limit of assistant steps."
    turn = await store.get_turn(error["turn_id"])
    assert turn is not None and turn.status == "aborted"
    assert turn.report is not None and turn.report["final_action"] == "aborted"
    assert await store.messages(Owner.user(7), UUID(error["conversation_id"])) == []


async def test_an_unexpected_failure_is_a_generic_chat_error(store: ConversationStore) -> None:
    provider = ScriptedProvider([RuntimeError("database password is hunter2")])
    events = await collect(service(store, provider).run_turn(USER, "Hi"))
    (error,) = events
    assert error["code"] == "chat_error"
    assert error["message"] == "Something went wrong. Please try again."
    assert "hunter2" not in str(error)
    turn = await store.get_turn(error["turn_id"])
    assert turn is not None and turn.status == "aborted"


async def run_confirmed_turn(
    chat: ChatService, decide: Callable[[dict[str, Any]], Any]
) -> tuple[list[dict[str, Any]], Any]:
    """Run a turn in a task, call `decide(confirm_event)` while it waits; (events, decision)."""
    events: list[dict[str, Any]] = []

    async def consume() -> None:
        # Appended one by one: the decider reads the list while the turn still runs.
        async for event in chat.run_turn(USER, "Rename steel to iron"):
            events.append(event)  # noqa: PERF401

    async def confirm_event() -> dict[str, Any] | None:
        return next((e for e in events if e["type"] == "confirm_mutation"), None)

    task = asyncio.create_task(consume())
    pending = await wait_for(confirm_event)
    decision = await decide(pending)
    await asyncio.wait_for(task, 5)
    return events, decision


@pytest.mark.parametrize("confirmed", [True, False])
async def test_a_client_confirmation_resumes_the_waiting_turn(
    store: ConversationStore, confirmed: bool
) -> None:
    log: list[dict[str, Any]] = []
    provider = ScriptedProvider([[RENAME], ["Done."]])
    chat = service(store, provider, log=log, settings=confirm_settings())

    async def decide(pending: dict[str, Any]) -> list[dict[str, Any]]:
        confirmation = await store.get_confirmation(UUID(pending["id"]))
        assert confirmation is not None
        turn_id = confirmation.turn_id

        async def waiting() -> bool:
            turn = await store.get_turn(turn_id)
            return turn is not None and turn.status == "awaiting_confirmation"

        await wait_for(waiting)
        return await collect(chat.resolve_confirmation(USER, pending["id"], confirmed))

    events, resolved = await run_confirmed_turn(chat, decide)
    status = "approved" if confirmed else "rejected"
    assert resolved == [
        {
            "type": "confirmation_resolved",
            "id": next(e["id"] for e in events if e["type"] == "confirm_mutation"),
            "status": status,
            "conversation_id": events[0]["conversation_id"],
        }
    ]
    assert log == ([{"material_id": 1, "name": "Iron"}] if confirmed else [])
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["result"]["status"] == ("executed" if confirmed else "rejected")
    assert events[-1]["type"] == "done"
    turn = await store.get_turn(events[-1]["turn_id"])
    assert turn is not None and turn.status == "completed"
    again = await collect(chat.resolve_confirmation(USER, resolved[0]["id"], True))
    assert [e["code"] for e in again] == ["confirmation_unavailable"]
    assert len(log) == (1 if confirmed else 0)


async def test_an_unanswered_confirmation_expires_as_a_rejection(
    store: ConversationStore,
) -> None:
    log: list[dict[str, Any]] = []
    provider = ScriptedProvider([[RENAME], ["Not changed."]])
    chat = service(
        store, provider, log=log, settings=confirm_settings(), confirm_timeout_seconds=0.05
    )
    events = await asyncio.wait_for(collect(chat.run_turn(USER, "Rename steel")), 5)
    pending = next(e for e in events if e["type"] == "confirm_mutation")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["result"]["status"] == "rejected"
    assert events[-1]["type"] == "done" and log == []
    confirmation = await store.get_confirmation(UUID(pending["id"]))
    assert confirmation is not None and confirmation.status == "expired"
    assert confirmation.reason == "confirmation_timed_out"
    assert confirmation.decided_at is not None  # stored as expired, not only read so
    late = await collect(chat.resolve_confirmation(USER, pending["id"], True))
    assert [e["code"] for e in late] == ["confirmation_unavailable"]
    assert log == []


async def test_a_staff_approval_is_decided_by_staff_only(store: ConversationStore) -> None:
    log: list[dict[str, Any]] = []
    provider = ScriptedProvider([[RENAME], ["Renamed."]])
    chat = service(store, provider, log=log, settings=confirm_settings(staff=True))
    refused: list[dict[str, Any]] = []

    async def decide(pending: dict[str, Any]) -> list[dict[str, Any]]:
        assert pending["approver"] == "staff"
        refused.extend(await collect(chat.resolve_confirmation(USER, pending["id"], True)))
        return await collect(
            chat.resolve_confirmation(STAFF, pending["id"], True, decided_by="staff:1")
        )

    events, resolved = await run_confirmed_turn(chat, decide)
    assert [e["code"] for e in refused] == ["confirmation_unavailable"]
    assert resolved[0]["status"] == "approved"
    assert log == [{"material_id": 1, "name": "Iron"}]
    confirmation = await store.get_confirmation(UUID(resolved[0]["id"]))
    assert confirmation is not None and confirmation.decided_by == "staff:1"
    assert events[-1]["type"] == "done"


async def test_a_client_cannot_decide_another_owners_confirmation(
    store: ConversationStore,
) -> None:
    log: list[dict[str, Any]] = []
    provider = ScriptedProvider([[RENAME], ["Done."]])
    chat = service(store, provider, log=log, settings=confirm_settings())

    async def decide(pending: dict[str, Any]) -> list[dict[str, Any]]:
        foreign = await collect(chat.resolve_confirmation(OTHER, pending["id"], True))
        assert [e["code"] for e in foreign] == ["confirmation_unavailable"]
        return await collect(chat.resolve_confirmation(USER, pending["id"], False))

    _, resolved = await run_confirmed_turn(chat, decide)
    assert resolved[0]["status"] == "rejected" and log == []


async def test_a_second_turn_sees_the_first_turns_messages(store: ConversationStore) -> None:
    provider = ScriptedProvider([["First answer."], ["Second answer."]])
    chat = service(store, provider)
    first = await collect(chat.run_turn(USER, "First question"))
    conversation_id = first[-1]["conversation_id"]
    second = await collect(chat.run_turn(USER, "Second question", conversation_id))
    assert second[-1]["conversation_id"] == conversation_id
    sent = [(m.role, m.content) for m in provider.requests[1].messages if m.role != "system"]
    assert sent == [
        ("user", "First question"),
        ("assistant", "First answer."),
        ("user", "Second question"),
    ]
    stored = await store.messages(Owner.user(7), UUID(conversation_id))
    assert len(stored) == 4


@pytest.mark.parametrize("foreign", ["other-owner", "unknown", "not-a-uuid"])
async def test_a_conversation_not_of_this_owner_is_refused(
    store: ConversationStore, foreign: str
) -> None:
    provider = ScriptedProvider([["Mine."]])
    chat = service(store, provider)
    first = await collect(chat.run_turn(USER, "Hi"))
    target = {
        "other-owner": first[-1]["conversation_id"],
        "unknown": str(uuid4()),
        "not-a-uuid": "nope",
    }[foreign]
    events = await collect(chat.run_turn(OTHER, "Show me", target))
    assert [(e["type"], e["code"]) for e in events] == [("error", "conversation_not_found")]
    provider.assert_consumed()


async def test_an_anonymous_actor_needs_a_session_owner(store: ConversationStore) -> None:
    anonymous = SimpleActor(id=None, is_authenticated=False)
    with pytest.raises(ValueError, match="session"):
        owner_of(anonymous)
    provider = ScriptedProvider([["Hello."]])
    owner = Owner.session("s" * 80)
    events = await collect(service(store, provider).run_turn(anonymous, "Hi", owner=owner))
    stored = await store.messages(owner, UUID(events[-1]["conversation_id"]))
    assert [m.item.kind for m in stored] == ["user", "assistant"]


async def test_a_blocked_message_is_stored_as_the_placeholder_only(
    store: ConversationStore,
) -> None:
    provider = ScriptedProvider([])
    config = AtomConfig(input=[Blocklist(["hunter2"])])
    chat = service(store, provider, atom_config=config)
    events = await collect(chat.run_turn(USER, "my password is hunter2"))
    assert events[-1]["type"] == "done"
    stored = await store.messages(Owner.user(7), UUID(events[-1]["conversation_id"]))
    user = stored[0].item
    assert user.kind == "user" and user.blocked
    assert "hunter2" not in user.content
    turn = await store.get_turn(events[-1]["turn_id"])
    assert turn is not None and turn.status == "completed"


async def test_a_consumer_that_stops_reading_aborts_the_turn(store: ConversationStore) -> None:
    provider = ScriptedProvider([["Hello ", "there."]])
    events = service(store, provider).run_turn(USER, "Hi")
    first = await anext(events)
    await events.aclose()
    turns = await store.list_turns(conversation_id=UUID(first["conversation_id"]))
    assert [t.status for t in turns] == ["aborted"]


async def test_the_next_turn_gets_earlier_tool_exchanges_natively(store: ConversationStore) -> None:
    provider = ScriptedProvider(
        [
            [tool_call("query", {"manager": "PartManager", "fields": ["name"]})],
            ["Three parts."],
            ["Still three."],
        ]
    )
    chat = service(store, provider)
    first = await collect(chat.run_turn(USER, "Which parts?"))
    await collect(chat.run_turn(USER, "And now?", first[-1]["conversation_id"]))
    sent = provider.requests[2].messages
    assert [m.role for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    call = sent[2].tool_calls[0]
    assert call.name == "query"
    assert sent[3].tool_call_id == call.id
    assert '"total_count": 3' in sent[3].content
    assert sent[-1].content == "And now?"
