"""ChatService: whole turns on both stores — persistence, errors, context.

Confirmations (suspending and resuming turns) are in test_service_confirmations.py.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any
from uuid import UUID, uuid4

import pytest

from chatomon import Blocklist, TokenUsage
from chatomon.chat.loop import LoopLimits
from chatomon.chat.pipeline import AtomConfig, owner_of
from chatomon.chat.store import ConversationStore, MemoryStore, Owner
from chatomon.data.actor import SimpleActor
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import tool_call

from .services import OTHER, USER, Budget, collect, service

pytestmark = pytest.mark.usefixtures("close_worker_connections")


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


async def test_a_finished_turn_leaves_no_generator_for_the_loop_to_close(
    store: ConversationStore,
) -> None:
    # An async generator dropped unfinished is closed later, by a task the loop starts
    # for it when it is collected: work outside the turn (on a request loop, after it).
    loop = asyncio.get_running_loop()
    dropped: list[str] = []

    def finalizer(generator: Any) -> None:
        dropped.append(generator.__qualname__)
        loop._asyncgen_finalizer_hook(generator)

    chat = service(store, ScriptedProvider([["Hello."], ["Again."]]))
    hooks = sys.get_asyncgen_hooks()
    sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=finalizer)
    try:
        first = await collect(chat.run_turn(USER, "Hi"))
        await collect(chat.run_turn(USER, "Again", UUID(first[-1]["conversation_id"])))
        gc.collect()
    finally:
        sys.set_asyncgen_hooks(*hooks)
    assert dropped == []


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


class SlowOpeningStore(MemoryStore):
    """A store whose open_turn is still writing when the caller gives up."""

    async def open_turn(self, *args: Any, **kwargs: Any) -> Any:
        opened = await super().open_turn(*args, **kwargs)
        await asyncio.sleep(0.05)
        return opened


async def test_a_turn_cancelled_while_it_opens_is_recorded_as_aborted() -> None:
    store = SlowOpeningStore()
    chat = service(store, ScriptedProvider([["never sent"]]))

    async def consume() -> None:
        async for _ in chat.run_turn(USER, "Hi"):
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (turn,) = await store.list_turns()
    assert turn.status == "aborted"


class BrokenStore(MemoryStore):
    """A store with one failing operation, as a database that went away would fail."""

    def __init__(self, failing: str) -> None:
        super().__init__()
        self.failing = failing

    async def open_turn(self, *args: Any, **kwargs: Any) -> Any:
        if self.failing == "open_turn":
            raise OSError("database is gone: password=hunter2")
        return await super().open_turn(*args, **kwargs)

    async def save_summary(self, *args: Any, **kwargs: Any) -> Any:
        if self.failing == "save_summary":
            raise OSError("database is gone")
        return await super().save_summary(*args, **kwargs)

    async def get_confirmation(self, *args: Any, **kwargs: Any) -> Any:
        if self.failing == "get_confirmation":
            raise OSError("database is gone")
        return await super().get_confirmation(*args, **kwargs)


async def test_a_store_failure_before_the_turn_opens_is_a_generic_chat_error() -> None:
    chat = service(BrokenStore("open_turn"), ScriptedProvider([]))
    events = await collect(chat.run_turn(USER, "Hi"))
    assert [(e["type"], e["code"]) for e in events] == [("error", "chat_error")]
    assert "hunter2" not in str(events)


async def test_a_failure_while_building_the_context_aborts_the_turn() -> None:
    store = BrokenStore("save_summary")
    provider = ScriptedProvider([["answer 0"], ["answer 1"], ["the summary"]])
    chat = service(store, provider, max_recent_messages=2, summarize_after=1)
    conversation = None
    for n in range(2):
        done = (await collect(chat.run_turn(USER, f"question {n}", conversation)))[-1]
        conversation = done["conversation_id"]
    events = await collect(chat.run_turn(USER, "question 2", conversation))
    assert [(e["type"], e["code"]) for e in events] == [("error", "chat_error")]
    turn = await store.get_turn(events[0]["turn_id"])
    assert turn is not None and turn.status == "aborted"
    provider.assert_consumed()  # the summary was written, storing it failed


async def test_a_store_failure_while_claiming_is_a_generic_chat_error() -> None:
    chat = service(BrokenStore("get_confirmation"), ScriptedProvider([]))
    events = await collect(chat.resolve_confirmation(USER, str(uuid4()), True))
    assert [(e["type"], e["code"]) for e in events] == [("error", "chat_error")]


async def two_turns(chat: Any) -> str:
    """Two answered turns of one conversation; its id."""
    conversation = None
    for n in range(2):
        done = (await collect(chat.run_turn(USER, f"question {n}", conversation)))[-1]
        conversation = done["conversation_id"]
    assert conversation is not None
    return str(conversation)


async def test_a_turns_summary_spends_the_askers_budget(store: ConversationStore) -> None:
    """The reference: "Once a token budget is exhausted, GeneralManager records the completed
    provider usage and rejects the next tool, confirmation write, summary, or provider round."

    The summary written for the turn is provider usage: the asker's budget records it
    beside the turn's round.
    """
    summary = TokenUsage(input_tokens=40, output_tokens=9)
    answer = TokenUsage(input_tokens=25, output_tokens=4)
    provider = ScriptedProvider(
        [["answer 0"], ["answer 1"], ["The summary.", summary], ["answer 2", answer]]
    )
    chat = service(store, provider, max_recent_messages=2, summarize_after=2)
    conversation = await two_turns(chat)
    budget = Budget(allowed=5, wait=7.2)
    events = await collect(chat.run_turn(USER, "question 2", conversation, budget=budget))
    assert events[-1]["type"] == "done"
    assert budget.recorded == [summary, answer]


async def test_an_exhausted_budget_rejects_the_turns_summary(store: ConversationStore) -> None:
    """The reference: an exhausted token budget rejects the next "summary": no provider
    request is made for it, and the client gets rate_limited with retry_after_seconds."""
    provider = ScriptedProvider([["answer 0"], ["answer 1"]])
    chat = service(store, provider, max_recent_messages=2, summarize_after=2)
    conversation = await two_turns(chat)
    events = await collect(
        chat.run_turn(USER, "question 2", conversation, budget=Budget(allowed=0, wait=7.2))
    )
    assert [(e["type"], e["code"], e["retry_after_seconds"]) for e in events] == [
        ("error", "rate_limited", 8)
    ]
    assert len(provider.requests) == 2, "neither the summary nor a round was requested"
    turn = await store.get_turn(events[0]["turn_id"])
    assert turn is not None and turn.status == "aborted"
