"""Planned turns through ChatService: the one pipeline, with scripted providers per role."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

from chatomon import Blocklist, TokenUsage
from chatomon.chat.pipeline import AtomConfig
from chatomon.chat.store import MemoryStore, Owner
from chatomon.providers.testing import Delay, FunctionProvider, ScriptedProvider, tool_call
from chatomon.public_errors import PLANNED_PUBLIC_MESSAGES
from tests.chat.services import RENAME, collect, confirm_settings

from .scripts import USER, by_question, plan, planned_service, roles, task

STEEL_PARTS = task("parts", "Which parts are made of steel?", manager="part")
PART_QUERY = tool_call("query", {"manager": "PartManager", "fields": ["name", "material"]})


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


async def test_a_one_task_read_streams_tool_events_with_task_ids_then_the_answer() -> None:
    planner = ScriptedProvider([[plan(STEEL_PARTS), TokenUsage(input_tokens=10, output_tokens=5)]])
    executor = ScriptedProvider([[PART_QUERY, TokenUsage(input_tokens=7, output_tokens=3)]])
    synthesizer = ScriptedProvider(
        [["Bolt is ", "made of steel.", TokenUsage(input_tokens=4, output_tokens=2)]]
    )
    store = MemoryStore()
    chat = planned_service(
        roles(planner=planner, executor=executor, synthesizer=synthesizer), store=store
    )
    events = await collect(chat.run_turn(USER, "Which parts are made of steel?"))
    assert types(events) == ["tool_call", "tool_result", "text_chunk", "text_chunk", "done"]
    call, result, *_, done = events
    assert call["task_id"] == result["task_id"] == "parts"
    assert call["id"] == result["id"] and call["name"] == "query"
    assert done["reply"] == "Bolt is made of steel."
    assert done["coverage"] == {"status": "complete", "resolved": 1, "total": 1, "unresolved": []}
    assert done["usage"] == {"input_tokens": 21, "output_tokens": 10}
    # One request per role: the requirement was met, so no extra executor round.
    assert (len(planner.requests), len(executor.requests), len(synthesizer.requests)) == (1, 1, 1)
    assert "mutate" not in executor.requests[0].tool_names
    turn = await store.get_turn(done["turn_id"])
    assert turn is not None and turn.report is not None
    planned = turn.report["planned"]
    assert planned["intent"] == "read"
    assert planned["coverage"]["status"] == "complete"
    (reported,) = planned["tasks"]
    assert reported["status"] == "resolved" and reported["role"] == "simple_executor"
    assert reported["tool_call_ids"] == [call["id"]]
    assert reported["evidence"][0]["kind"] == "query"
    assert reported["question"] is None  # capture_content="none": no restated words
    assert planned["rounds_used"] == 3
    assert planned["roles_used"] == ["planner", "simple_executor", "synthesizer"]
    # The synthesizer saw the evidence, and the conversation keeps the calls and answer.
    assert "Bolt" in "\n".join(m.content for m in synthesizer.requests[0].messages)
    stored = await store.messages(Owner.user(7), UUID(done["conversation_id"]))
    assert stored[0].item.kind == "user"
    assert stored[-1].item.content == "Bolt is made of steel."


async def test_independent_roots_run_concurrently() -> None:
    started: list[str] = []
    all_three = asyncio.Event()

    async def executor(messages: list[Any], tools: list[Any]) -> Any:
        prompt = "\n".join(m.content for m in messages)
        name = next(n for n in ("Bolt", "Gear", "Bearing") if n in prompt)
        started.append(name)
        if len(started) == 3:
            all_three.set()
        # Each waits for the other two: run one at a time, this would never finish.
        await asyncio.wait_for(all_three.wait(), timeout=5)
        return [tool_call("query", {"manager": "PartManager", "filters": {"name": name}})]

    tasks = [
        task(n.lower(), f"What is {n} made of?", manager="part")
        for n in ("Bolt", "Gear", "Bearing")
    ]
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(*tasks)]]),
            executor=FunctionProvider(executor),
            synthesizer=ScriptedProvider([["Steel, cobalt and aluminum."]]),
        )
    )
    events = await collect(chat.run_turn(USER, "What are Bolt, Gear and Bearing made of?"))
    assert sorted(started) == ["Bearing", "Bolt", "Gear"]
    assert events[-1]["coverage"]["resolved"] == 3
    assert {e["task_id"] for e in events if e["type"] == "tool_result"} == {
        "bolt",
        "gear",
        "bearing",
    }


async def test_max_concurrent_tasks_bounds_how_many_run_at_once() -> None:
    running = 0
    most = 0

    async def executor(messages: list[Any], tools: list[Any]) -> Any:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01)
        running -= 1
        return (
            [tool_call("query", {"manager": "PartManager"})]
            if "Bolt" in messages[-1].content
            else [tool_call("query", {"manager": "MaterialManager"})]
        )

    tasks = [
        task("a", "Bolt parts", manager="part"),
        task("b", "Steel materials", manager="material"),
    ]
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(*tasks)]]),
            executor=FunctionProvider(executor),
            synthesizer=ScriptedProvider([["Done."]]),
        ),
        max_concurrent_tasks=1,
    )
    events = await collect(chat.run_turn(USER, "Bolt parts and steel materials"))
    assert events[-1]["type"] == "done"
    assert most == 1


async def test_a_failed_root_blocks_only_its_dependents_and_the_answer_is_partial() -> None:
    tasks = [
        task("materials", "Which materials exist?", manager="material"),
        task("projects", "Which projects exist?", manager="project"),
        task(
            "uses",
            "Which projects use those materials?",
            manager="project",
            depends_on=["materials"],
        ),
    ]
    executor = by_question(
        {
            "Which materials exist?": ["I cannot tell."],  # no evidence: unresolved
            "Which projects exist?": [tool_call("query", {"manager": "ProjectManager"})],
        }
    )
    fallback = by_question({"Which materials exist?": ["Still nothing."]})
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(*tasks)]]),
            executor=executor,
            complex_executor=by_question(
                {
                    "Which materials exist?": ["No."],
                    "Which projects exist?": [tool_call("query", {"manager": "ProjectManager"})],
                }
            ),
            synthesizer=ScriptedProvider([["There are two projects: Apollo and Mercury."]]),
            fallback=fallback,
        )
    )
    events = await collect(chat.run_turn(USER, "Which projects use which materials?"))
    done = events[-1]
    assert done["type"] == "done"
    assert done["coverage"]["status"] == "partial"
    assert done["coverage"]["unresolved"] == [
        {"task_id": "materials", "reason": "provider_failed"},
        {"task_id": "uses", "reason": "dependency_blocked"},
    ]
    # The blocked dependent never reached a provider.
    assert not any(
        "use those materials" in m.content for r in executor.requests for m in r.messages
    )


async def test_nothing_resolved_ends_with_the_first_roots_stable_error() -> None:
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(task("t", "Which widgets exist?", manager="widget"))]]),
        )
    )
    events = await collect(chat.run_turn(USER, "Which widgets exist?"))
    # "widget" matches no manager at all: the resolver has nothing to offer.
    assert types(events) == ["error"]
    assert events[-1]["code"] == "manager_unresolved"
    assert events[-1]["message"] == PLANNED_PUBLIC_MESSAGES["manager_unresolved"]


async def test_an_invalid_plan_is_corrected_once_then_falls_back_once_then_fails() -> None:
    spent = TokenUsage(input_tokens=5, output_tokens=1)
    planner = ScriptedProvider([["not json", spent], ['{"intent": "read", "tasks": []}', spent]])
    fallback = ScriptedProvider([['{"intent": "read"}', spent]])
    store = MemoryStore()
    chat = planned_service(roles(planner=planner, fallback=fallback), store=store)
    events = await collect(chat.run_turn(USER, "Anything?"))
    assert events == [
        {
            "type": "error",
            "code": "invalid_plan",
            "message": "I could not prepare a safe plan for that request.",
            "conversation_id": events[0]["conversation_id"],
            "turn_id": events[0]["turn_id"],
        }
    ]
    assert (len(planner.requests), len(fallback.requests)) == (2, 1)
    turn = await store.get_turn(events[0]["turn_id"])
    assert turn is not None and turn.status == "aborted"
    assert turn.report is not None and turn.report["planned"]["terminal_reason"] == "invalid_plan"
    # The three planner requests were made: their usage counts, though no plan came of them.
    assert turn.report["usage"] == {"input_tokens": 15, "output_tokens": 3}


async def test_a_mutation_plan_runs_the_unchanged_tool_loop_with_its_confirmation() -> None:
    legacy = ScriptedProvider([[RENAME]])
    chat = planned_service(
        roles(planner=ScriptedProvider([[plan(intent="mutation")]])),
        legacy=legacy,
        tools=confirm_settings(),
    )
    events = await collect(chat.run_turn(USER, "Rename material 1 to Iron"))
    assert types(events) == ["tool_call", "confirm_mutation"]
    assert "task_id" not in events[0]
    assert "mutate" in legacy.requests[0].tool_names


async def test_the_round_budget_is_enforced() -> None:
    looping = FunctionProvider(
        lambda messages, tools: [tool_call("get_manager_schema", {"manager": "PartManager"})]
    )
    chat = planned_service(
        roles(planner=ScriptedProvider([[plan(STEEL_PARTS)]]), executor=looping, fallback=looping),
        max_rounds=3,
        max_rounds_per_root=3,
    )
    events = await collect(chat.run_turn(USER, "Which parts are made of steel?"))
    assert events[-1]["code"] == "budget_exhausted"
    assert events[-1]["message"] == PLANNED_PUBLIC_MESSAGES["budget_exhausted"]
    assert len(looping.requests) <= 2  # the planner took one of the three rounds


async def test_a_repeated_call_reuses_the_recorded_evidence() -> None:
    same = [tool_call("query", {"manager": "MaterialManager", "fields": ["name"]})]
    tasks = [
        task("a", "List materials A", manager="material"),
        task("b", "List materials B", manager="material"),
    ]
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(*tasks)]]),
            executor=FunctionProvider(lambda messages, tools: same),
            synthesizer=ScriptedProvider([["Steel, Aluminum, Cobalt."]]),
        ),
        max_concurrent_tasks=1,
    )
    events = await collect(chat.run_turn(USER, "Materials?"))
    assert types(events).count("tool_call") == 1
    assert events[-1]["coverage"]["resolved"] == 2


async def test_the_evidence_deadline_ends_slow_tasks() -> None:
    slow = ScriptedProvider([[Delay(5), PART_QUERY]] * 2)
    chat = planned_service(
        roles(planner=ScriptedProvider([[plan(STEEL_PARTS)]]), executor=slow, fallback=slow),
        evidence_timeout_seconds=0.05,
    )
    events = await collect(chat.run_turn(USER, "Which parts are made of steel?"))
    assert events[-1]["code"] == "deadline_exceeded"


async def test_synthesis_falls_back_once_then_fails_with_its_stable_error() -> None:
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(STEEL_PARTS)]]),
            executor=ScriptedProvider([[PART_QUERY]]),
            synthesizer=ScriptedProvider([[RuntimeError("down")]]),
            fallback=ScriptedProvider([[""]]),
        )
    )
    events = await collect(chat.run_turn(USER, "Which parts are made of steel?"))
    assert events[-1]["code"] == "synthesis_failed"
    assert "down" not in str(events)


async def test_output_orbitals_check_the_synthesized_answer() -> None:
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(STEEL_PARTS)]]),
            executor=ScriptedProvider([[PART_QUERY]]),
            synthesizer=ScriptedProvider([["The secret part is Bolt."]]),
        ),
        atom_config=AtomConfig(output=[Blocklist(["secret"])]),
    )
    events = await collect(chat.run_turn(USER, "Which parts are made of steel?"))
    assert events[-1]["type"] == "done"
    assert events[-1]["final_action"] != "answered"
    assert "secret" not in events[-1]["reply"]


async def test_planned_audit_events_pass_the_allowlist_only() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(STEEL_PARTS)]]),
            executor=ScriptedProvider([[PART_QUERY]]),
            synthesizer=ScriptedProvider([["Bolt."]]),
        ),
        audit=lambda kind, payload: seen.append((kind, dict(payload))),
    )
    await collect(chat.run_turn(USER, "Which parts are made of steel?"))
    planned = [(k, p) for k, p in seen if k.startswith("planned_")]
    assert {k for k, _ in planned} >= {"planned_plan", "planned_task", "planned_turn"}
    text = repr(planned)
    for secret in ("PartManager", "Bolt", "steel", "parts"):
        assert secret not in text
