"""Suspended turns: a mutation waits, stored, and its turn resumes wherever it is decided."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest

from chatomon import Blocklist, TokenUsage
from chatomon.chat.pipeline import AtomConfig, ChatService
from chatomon.chat.pipeline.activity import Activity
from chatomon.chat.store import ConversationStore, Owner
from chatomon.data.actor import SimpleActor
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import tool_call

from .services import (
    OTHER,
    RENAME,
    STAFF,
    USER,
    Budget,
    collect,
    confirm_settings,
    rename_script,
    service,
)

pytestmark = pytest.mark.usefixtures("close_worker_connections")

IRON = {"material_id": 1, "name": "Iron"}


async def suspended_turn(
    chat: ChatService, text: str = "Rename steel to iron", **options: Any
) -> dict[str, Any]:
    """Run a turn up to its confirm_mutation event; return that event."""
    events = await collect(chat.run_turn(USER, text, **options))
    assert [e["type"] for e in events] == ["tool_call", "confirm_mutation"]
    return events[-1]


@pytest.mark.parametrize("records", [True, False])
async def test_an_approved_write_runs_where_mutate_would_run_it(
    store: ConversationStore, records: bool
) -> None:
    # Through the toolset's runner, as the tools' own work (a Django app's: off the
    # request's thread); a records manager's mutation inline, as `mutate` runs it.
    ran: list[str] = []

    async def runner(function: Any, *args: Any, **kwargs: Any) -> Any:
        ran.append(function.__name__)
        return function(*args, **kwargs)

    log: list[dict[str, Any]] = []
    # A mutation of no records manager may do I/O.
    manager = "MaterialManager" if records else None
    chat = service(
        store, rename_script(), log=log, settings=confirm_settings(), rename_manager=manager
    )
    chat.toolset.run_blocking = runner
    pending = await suspended_turn(chat)
    mutate_in_runner = bool(ran)  # the mutate call that asked for the confirmation
    ran.clear()
    await collect(chat.resolve_confirmation(USER, pending["id"], True))
    assert mutate_in_runner is not records  # the write runs where mutate ran
    assert ran == ([] if records else ["execute_mutation"]) and log == [IRON]


@pytest.mark.parametrize("confirmed", [True, False])
async def test_a_client_decision_resumes_the_suspended_turn(
    store: ConversationStore, confirmed: bool
) -> None:
    log: list[dict[str, Any]] = []
    chat = service(store, rename_script(), log=log, settings=confirm_settings())
    pending = await suspended_turn(chat)
    assert pending["mutation"] == "renameMaterial" and pending["input"] == IRON
    assert pending["approver"] == "client" and log == []
    turn = await store.get_turn(pending["turn_id"])
    assert turn is not None and turn.status == "awaiting_confirmation"

    events = await collect(chat.resolve_confirmation(USER, pending["id"], confirmed))
    status = "approved" if confirmed else "rejected"
    assert [e["type"] for e in events] == [
        "confirmation_resolved",
        "tool_result",
        "text_chunk",
        "done",
    ]
    assert events[0]["id"] == pending["id"] and events[0]["status"] == status
    assert events[0]["decided_by"] == "you"  # never the owner's key (a session key, for some)
    decided = await store.get_confirmation(UUID(pending["id"]))
    assert decided is not None and decided.decided_by == "user:7"  # kept for console and audit
    assert events[1]["result"]["status"] == ("executed" if confirmed else "rejected")
    if not confirmed:  # the preview was kept with the suspended call
        assert "(name from Steel to Iron on MaterialManager #1)" in events[1]["result"]["message"]
    assert all(e["turn_id"] == pending["turn_id"] for e in events)
    assert log == ([IRON] if confirmed else [])
    turn = await store.get_turn(pending["turn_id"])
    assert turn is not None and turn.status == "completed"
    stored = await store.messages(Owner.user(7), UUID(pending["conversation_id"]))
    assert [m.item.kind for m in stored] == ["user", "tool_calls", "tool_result", "assistant"]
    # Reference: "confirmation_unavailable | WebSocket | Durable confirmation state was
    # already claimed, resolved, or expired."
    again = await collect(chat.resolve_confirmation(USER, pending["id"], True))
    assert [e["code"] for e in again] == ["confirmation_unavailable"]
    assert len(log) == (1 if confirmed else 0)


async def test_one_report_covers_the_whole_turn_with_its_pause(store: ConversationStore) -> None:
    provider = ScriptedProvider(
        [
            [RENAME, TokenUsage(input_tokens=10, output_tokens=2)],
            ["Done.", TokenUsage(input_tokens=20)],
        ]
    )
    reports: list[Any] = []
    config = AtomConfig(input=[Blocklist(["password"])], options={"on_turn": [reports.append]})
    chat = service(store, provider, settings=confirm_settings(), atom_config=config)
    pending = await suspended_turn(chat)
    assert reports == []  # a suspended turn is not reported yet
    await collect(chat.resolve_confirmation(USER, pending["id"], True))
    (report,) = reports
    assert report.turn_id == pending["turn_id"]
    assert [r.kind for r in report.input] == ["Blocklist"]  # from before the pause
    assert report.usage == TokenUsage(input_tokens=30, output_tokens=2)
    (pause,) = report.pauses
    assert (pause.mutation, pause.approver, pause.outcome) == (
        "renameMaterial",
        "client",
        "approved",
    )
    assert pause.waited_seconds >= 0
    kinds = [(s.kind, s.name, s.status) for s in report.steps]
    assert kinds == [
        ("provider_round", "ScriptedProvider", None),
        ("tool_call", "mutate", "waiting"),
        ("tool_call", "mutate", "executed"),
        ("provider_round", "ScriptedProvider", None),
    ]
    turn = await store.get_turn(pending["turn_id"])
    assert turn is not None and turn.report is not None
    assert turn.report["pauses"][0]["outcome"] == "approved"


async def test_a_blocked_message_of_a_suspended_turn_is_stored_as_the_placeholder(
    store: ConversationStore,
) -> None:
    guard = Blocklist(["hunter2"], guidance="Refuse politely.")
    chat = service(
        store, rename_script(), settings=confirm_settings(), atom_config=AtomConfig(input=[guard])
    )
    pending = await suspended_turn(chat, "my password is hunter2, rename steel")
    stored = await store.messages(Owner.user(7), UUID(pending["conversation_id"]))
    user = stored[0].item
    assert user.kind == "user" and user.blocked and "hunter2" not in user.content
    events = await collect(chat.resolve_confirmation(USER, pending["id"], True))
    assert events[-1]["type"] == "done"
    stored = await store.messages(Owner.user(7), UUID(pending["conversation_id"]))
    assert [m.item.kind for m in stored] == ["user", "tool_calls", "tool_result", "assistant"]
    assert not any("hunter2" in (m.item.content or "") for m in stored)


async def test_a_fresh_service_resumes_a_turn_another_one_suspended(
    store: ConversationStore,
) -> None:
    log: list[dict[str, Any]] = []
    first = service(store, ScriptedProvider([[RENAME]]), settings=confirm_settings())
    pending = await suspended_turn(first)
    del first  # nothing of the first service is needed: the state is in the store
    fresh = service(store, ScriptedProvider([["Renamed."]]), log=log, settings=confirm_settings())
    events = await collect(fresh.resolve_confirmation(USER, pending["id"], True))
    assert events[-1]["type"] == "done" and events[-1]["reply"] == "Renamed."
    assert log == [IRON]


async def test_an_expired_confirmation_resumes_as_timed_out(store: ConversationStore) -> None:
    log: list[dict[str, Any]] = []
    published: list[dict[str, Any]] = []

    async def publish(event: dict[str, Any]) -> None:
        published.append(event)

    chat = service(
        store,
        rename_script("Nothing was changed."),
        log=log,
        settings=confirm_settings(),
        confirm_timeout_seconds=0.05,
        publisher=publish,
    )
    pending = await suspended_turn(chat)
    await asyncio.sleep(0.1)
    assert await chat.expire_due() == 1
    assert [e["type"] for e in published] == [
        "confirmation_resolved",
        "tool_result",
        "text_chunk",
        "done",
    ]
    assert published[0]["status"] == "expired"
    assert published[0]["reason"] == "confirmation_timed_out"
    assert published[1]["result"]["status"] == "timed_out"
    assert log == []
    confirmation = await store.get_confirmation(UUID(pending["id"]))
    assert confirmation is not None and confirmation.status == "expired"
    turn = await store.get_turn(pending["turn_id"])
    assert turn is not None and turn.status == "completed"
    assert turn.report is not None and turn.report["pauses"][0]["outcome"] == "expired"
    assert await chat.expire_due() == 0


async def test_deciding_an_expired_confirmation_is_refused_and_resolves_it(
    store: ConversationStore,
) -> None:
    published: list[dict[str, Any]] = []

    async def publish(event: dict[str, Any]) -> None:
        published.append(event)

    chat = service(
        store,
        rename_script(),
        settings=confirm_settings(),
        confirm_timeout_seconds=0.05,
        publisher=publish,
    )
    pending = await suspended_turn(chat)
    await asyncio.sleep(0.1)
    late = await collect(chat.resolve_confirmation(USER, pending["id"], True))
    # A known id, expired: "confirmation_unavailable" (the reference's "... or expired").
    assert [e["code"] for e in late] == ["confirmation_unavailable"]
    assert published[-1]["type"] == "done"  # the first touch resumed it as timed out
    turn = await store.get_turn(pending["turn_id"])
    assert turn is not None and turn.status == "completed"


async def test_a_late_decision_resolves_only_its_own_expired_confirmation(
    store: ConversationStore,
) -> None:
    published: list[dict[str, Any]] = []

    async def publish(event: dict[str, Any]) -> None:
        published.append(event)

    script = ScriptedProvider([[RENAME], [RENAME], ["Timed out."], ["Timed out."]])
    chat = service(
        store, script, settings=confirm_settings(), confirm_timeout_seconds=0.05, publisher=publish
    )
    # Two conversations: one waiting conversation refuses a second message (confirmation_pending).
    first = await suspended_turn(chat)
    second = await suspended_turn(chat, new_conversation=True)
    await asyncio.sleep(0.1)
    late = await collect(chat.resolve_confirmation(USER, first["id"], True))
    assert [e["code"] for e in late] == ["confirmation_unavailable"]
    # The other overdue turn is not resumed by someone else's request: expiry does that.
    assert {e["turn_id"] for e in published} == {first["turn_id"]}
    waiting = await store.get_turn(second["turn_id"])
    assert waiting is not None and waiting.status == "awaiting_confirmation"
    assert await chat.expire_due() == 1
    resumed = await store.get_turn(second["turn_id"])
    assert resumed is not None and resumed.status == "completed"


async def test_a_staff_approval_is_decided_by_staff_for_the_asking_user(
    store: ConversationStore,
) -> None:
    log: list[dict[str, Any]] = []
    loaded: list[Owner] = []

    async def load_actor(owner: Owner) -> SimpleActor:
        loaded.append(owner)
        return SimpleActor(id=int(owner.key))

    chat = service(
        store,
        rename_script(),
        log=log,
        settings=confirm_settings(staff=True),
        actor_loader=load_actor,
    )
    pending = await suspended_turn(chat)
    assert pending["approver"] == "staff"
    # Not the user's to decide: an invalid id for them, however often they retry.
    refused = await collect(chat.resolve_confirmation(USER, pending["id"], True))
    assert [e["code"] for e in refused] == ["bad_event"]
    events = await collect(
        chat.resolve_confirmation(STAFF, pending["id"], True, decided_by="staff:admin")
    )
    # The event reaches the asker's pages: no staff username; the store keeps it.
    assert events[0]["decided_by"] == "a staff member" and events[-1]["type"] == "done"
    assert loaded == [Owner.user(7)] and log == [IRON]
    confirmation = await store.get_confirmation(UUID(pending["id"]))
    assert confirmation is not None and confirmation.decided_by == "staff:admin"


async def test_a_rejection_keeps_its_reason(store: ConversationStore) -> None:
    chat = service(store, rename_script(), settings=confirm_settings(staff=True))
    pending = await suspended_turn(chat)
    events = await collect(
        chat.resolve_confirmation(
            STAFF, pending["id"], False, decided_by="staff:admin", reason="Wrong material"
        )
    )
    assert events[0]["status"] == "rejected" and events[0]["reason"] == "Wrong material"
    confirmation = await store.get_confirmation(UUID(pending["id"]))
    assert confirmation is not None and confirmation.reason == "Wrong material"


async def test_another_owners_confirmation_id_is_a_bad_event(store: ConversationStore) -> None:
    # Reference (error codes): "bad_event | Confirmation HTTP, WebSocket | The event shape,
    # confirmation payload, or confirmation ID is invalid." A foreign id reads as unknown.
    log: list[dict[str, Any]] = []
    chat = service(store, rename_script(), log=log, settings=confirm_settings())
    pending = await suspended_turn(chat)
    foreign = await collect(chat.resolve_confirmation(OTHER, pending["id"], True))
    unknown = await collect(chat.resolve_confirmation(OTHER, str(uuid4()), True))
    assert [e["code"] for e in foreign] == ["bad_event"] and log == []
    assert foreign == unknown  # the same event: nothing tells that the id exists
    events = await collect(chat.resolve_confirmation(USER, pending["id"], True))
    assert events[-1]["type"] == "done" and log == [IRON]


async def test_a_consumer_that_stops_reading_after_the_decision_aborts_the_turn(
    store: ConversationStore,
) -> None:
    log: list[dict[str, Any]] = []
    chat = service(store, rename_script(), log=log, settings=confirm_settings())
    pending = await suspended_turn(chat)
    events = chat.resolve_confirmation(USER, pending["id"], True)
    first = await anext(events)
    assert first["type"] == "confirmation_resolved"
    await events.aclose()
    turn = await store.get_turn(pending["turn_id"])
    assert turn is not None and turn.status == "aborted"  # not left waiting forever
    assert log == []


async def test_a_malformed_confirmation_id_is_a_bad_event(store: ConversationStore) -> None:
    chat = service(store, rename_script(), settings=confirm_settings())
    events = await collect(chat.resolve_confirmation(USER, "call-1", True))
    assert [(e["type"], e["code"]) for e in events] == [("error", "bad_event")]


@pytest.mark.parametrize("decider", ["client", "staff"])
async def test_an_unknown_confirmation_id_is_a_bad_event(
    store: ConversationStore, decider: str
) -> None:
    # Reference: bad_event when "the confirmation ID is invalid"; confirmation_unavailable
    # only when "durable confirmation state was already claimed, resolved, or expired".
    chat = service(store, rename_script(), settings=confirm_settings())
    await suspended_turn(chat)
    decided_by = "staff:admin" if decider == "staff" else None
    actor = STAFF if decider == "staff" else USER
    events = await collect(chat.resolve_confirmation(actor, uuid4(), True, decided_by))
    assert [(e["type"], e["code"]) for e in events] == [("error", "bad_event")]
    assert events[0]["message"] == "This is not a confirmation you can decide."


async def test_staff_cannot_decide_a_client_confirmation(store: ConversationStore) -> None:
    log: list[dict[str, Any]] = []
    chat = service(store, rename_script(), log=log, settings=confirm_settings())
    pending = await suspended_turn(chat)
    events = await collect(
        chat.resolve_confirmation(STAFF, pending["id"], True, decided_by="staff:admin")
    )
    assert [e["code"] for e in events] == ["bad_event"] and log == []
    confirmation = await store.get_confirmation(UUID(pending["id"]))
    assert confirmation is not None and confirmation.status == "pending"


async def test_two_concurrent_claimers_run_the_mutation_once(store: ConversationStore) -> None:
    log: list[dict[str, Any]] = []
    provider = ScriptedProvider([[RENAME], ["Done."], ["Done."]])
    chat = service(store, provider, log=log, settings=confirm_settings())
    pending = await suspended_turn(chat)
    outcomes = await asyncio.gather(
        collect(chat.resolve_confirmation(USER, pending["id"], True)),
        collect(chat.resolve_confirmation(USER, pending["id"], True)),
    )
    winner, loser = sorted(outcomes, key=lambda events: events[0]["type"])
    assert [e["type"] for e in winner] == [
        "confirmation_resolved",
        "tool_result",
        "text_chunk",
        "done",
    ]
    assert [(e["type"], e["code"]) for e in loser] == [("error", "confirmation_unavailable")]
    assert log == [IRON]


async def test_a_transport_that_cannot_confirm_ends_the_turn(store: ConversationStore) -> None:
    chat = service(store, rename_script(), settings=confirm_settings())
    events = await collect(chat.run_turn(USER, "Rename steel", can_confirm=False))
    assert [e["type"] for e in events] == ["tool_call", "error"]
    assert events[-1]["code"] == "confirmation_required_transport"
    assert await store.list_pending() == []
    turn = await store.get_turn(events[-1]["turn_id"])
    assert turn is not None and turn.status == "aborted"


async def test_a_staff_approval_suspends_even_without_client_confirmations(
    store: ConversationStore,
) -> None:
    chat = service(store, rename_script(), settings=confirm_settings(staff=True))
    events = await collect(chat.run_turn(USER, "Rename steel", can_confirm=False))
    assert events[-1]["type"] == "confirm_mutation" and events[-1]["approver"] == "staff"
    assert [str(c.id) for c in await store.list_pending("staff")] == [events[-1]["id"]]
    turn = await store.get_turn(events[-1]["turn_id"])
    assert turn is not None and turn.status == "awaiting_confirmation"


async def test_a_resumed_turn_can_wait_for_a_second_mutation(store: ConversationStore) -> None:
    second = tool_call(
        "mutate", {"mutation": "renameMaterial", "input": {"material_id": 2, "name": "Tin"}}
    )
    log: list[dict[str, Any]] = []
    reports: list[Any] = []
    chat = service(
        store,
        ScriptedProvider([[RENAME], [second], ["Both renamed."]]),
        log=log,
        settings=confirm_settings(),
        atom_config=AtomConfig(options={"on_turn": [reports.append]}),
    )
    pending = await suspended_turn(chat)
    middle = await collect(chat.resolve_confirmation(USER, pending["id"], True))
    assert [e["type"] for e in middle][-2:] == ["tool_call", "confirm_mutation"]
    assert middle[-1]["id"] != pending["id"] and reports == []
    last = await collect(chat.resolve_confirmation(USER, middle[-1]["id"], True))
    assert last[-1]["reply"] == "Both renamed."
    assert log == [IRON, {"material_id": 2, "name": "Tin"}]
    (report,) = reports
    assert [p.outcome for p in report.pauses] == ["approved", "approved"]
    stored = await store.messages(Owner.user(7), UUID(pending["conversation_id"]))
    assert [m.item.kind for m in stored] == [
        "user",
        "tool_calls",
        "tool_result",
        "tool_calls",
        "tool_result",
        "assistant",
    ]


async def test_output_orbitals_check_the_answer_written_after_the_pause(
    store: ConversationStore,
) -> None:
    provider = ScriptedProvider([[RENAME], ["The secret is Iron."], ["Renamed it."]])
    config = AtomConfig(output=[Blocklist(["secret"], guidance="Do not say secret.")])
    chat = service(store, provider, settings=confirm_settings(), atom_config=config)
    pending = await suspended_turn(chat)
    events = await collect(chat.resolve_confirmation(USER, pending["id"], True))
    assert events[-1]["reply"] == "Renamed it."
    turn = await store.get_turn(pending["turn_id"])
    assert turn is not None and turn.report is not None
    assert [a["decision"] for a in turn.report["output"]] == ["regenerate", "accept"]


async def test_listeners_hear_every_step_and_a_failing_one_is_harmless(
    store: ConversationStore,
) -> None:
    heard: list[Activity] = []

    def broken(activity: Activity) -> None:
        raise RuntimeError("listener bug")

    chat = service(
        store, rename_script(), settings=confirm_settings(), listeners=[broken, heard.append]
    )
    pending = await suspended_turn(chat)
    await collect(chat.resolve_confirmation(USER, pending["id"], True))
    assert [a.kind for a in heard] == [
        "message_received",
        "confirmation_requested",
        "confirmation_resolved",
        "tool_called",
        "mutation_executed",
        "turn_finished",
        "assistant_message",
    ]
    executed = next(a for a in heard if a.kind == "mutation_executed")
    assert executed.payload["mutation"] == "renameMaterial"
    assert executed.payload["input"] == IRON
    assert executed.payload["result"]["status"] == "executed"
    assert all(a.turn_id == pending["turn_id"] for a in heard)
    assert heard[0].actor is USER


async def test_an_exhausted_budget_ends_the_turn_rate_limited(store: ConversationStore) -> None:
    provider = ScriptedProvider([[tool_call("search_managers", {"query": "parts"})], ["never"]])
    budget = Budget(allowed=1, wait=29.2)
    chat = service(store, provider)
    events = await collect(chat.run_turn(USER, "Which parts?", budget=budget))
    error = events[-1]
    assert (error["code"], error["retry_after_seconds"]) == ("rate_limited", 30)
    assert error["message"] == "Chat rate limit exceeded. Try again later."
    assert len(budget.recorded) == 1


async def test_expiry_uses_the_staff_timeout_for_staff_approvals(
    store: ConversationStore,
) -> None:
    chat = service(
        store,
        rename_script(),
        settings=confirm_settings(staff=True),
        confirm_timeout_seconds=1,
        staff_approval_timeout_seconds=3600,
    )
    pending = await suspended_turn(chat)
    confirmation = await store.get_confirmation(UUID(pending["id"]))
    assert confirmation is not None
    lifetime = confirmation.expires_at - confirmation.created_at
    assert timedelta(seconds=3590) < lifetime <= timedelta(seconds=3600)


async def test_an_exhausted_budget_rejects_the_resumed_confirmed_write(
    store: ConversationStore,
) -> None:
    """The reference: "Once a token budget is exhausted, GeneralManager records the completed
    provider usage and rejects the next tool, confirmation write, summary, or provider round."

    The approval is claimed, but the write it approves is not executed.
    """
    log: list[dict[str, Any]] = []
    chat = service(store, rename_script(), log=log, settings=confirm_settings())
    pending = await suspended_turn(chat)
    spent = Budget(allowed=0, wait=3.5)
    events = await collect(chat.resolve_confirmation(USER, pending["id"], True, budget=spent))
    assert [e["type"] for e in events] == ["confirmation_resolved", "error"]
    assert (events[-1]["code"], events[-1]["retry_after_seconds"]) == ("rate_limited", 4)
    assert log == []
