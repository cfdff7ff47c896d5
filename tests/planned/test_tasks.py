"""Planned tasks in depth: calculations, dynamic children, regeneration, rate limits, the SDK."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chatomon import Atom, Verdict, orbital
from chatomon.chat.pipeline import AtomConfig, ChatService
from chatomon.chat.store import MemoryStore
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.fixtures import toy_registry
from chatomon.errors import ChatConfigurationError, ProviderError
from chatomon.planned import (
    PlannedNucleus,
    PlannedScope,
    PlannedTurns,
    SchedulerCallbacks,
    iter_planned_read_events,
    prepare_planned_turn,
)
from chatomon.providers.base import Message
from chatomon.providers.testing import Delay, FunctionProvider, ScriptedProvider, tool_call
from tests.chat.services import Budget, collect

from .scripts import USER, plan, planned_service, planned_turns, roles, task

MATERIALS = tool_call("query", {"manager": "MaterialManager", "fields": ["name", "density"]})
TOTAL_DENSITY = task(
    "density",
    "What is the total density of all materials?",
    manager="material",
    needs=[{"kind": "query"}, {"kind": "calculation", "operation": "sum"}],
)


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


async def test_a_calculation_runs_in_exact_decimal_over_the_evidence() -> None:
    executor = ScriptedProvider(
        [
            [MATERIALS],
            [
                tool_call(
                    "calculate",
                    {
                        "operation": "sum",
                        "operands": [{"evidence_id": "e1", "path": ["data", "*", "density"]}],
                    },
                )
            ],
        ]
    )
    synthesizer = ScriptedProvider([["The total density is 19.4."]])
    store = MemoryStore()
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(TOTAL_DENSITY)]]),
            executor=executor,
            synthesizer=synthesizer,
        ),
        store=store,
    )
    events = await collect(chat.run_turn(USER, "Total density of all materials?"))
    assert events[-1]["coverage"]["status"] == "complete"
    assert "calculate" in executor.requests[0].tool_names
    # The executor saw the evidence id it needed; the synthesizer got the exact value.
    assert '"evidence_id"' in executor.requests[1].messages[-1].content
    assert '"19.4"' in "\n".join(m.content for m in synthesizer.requests[0].messages)
    turn = await store.get_turn(events[-1]["turn_id"])
    assert turn is not None and turn.report is not None
    (reported,) = turn.report["planned"]["tasks"]
    assert [e["kind"] for e in reported["evidence"]] == ["query", "calculation"]
    assert reported["role"] == "complex_executor"  # a calculation is never "simple"


async def test_an_aggregate_answers_a_count_in_one_round() -> None:
    count = task(
        "count",
        "How many parts are there?",
        manager="part",
        needs=[{"kind": "query"}, {"kind": "calculation", "operation": "count"}],
    )
    executor = ScriptedProvider([[tool_call("aggregate", {"manager": "PartManager"})]])
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(count)]]),
            executor=executor,
            synthesizer=ScriptedProvider([["There are 3 parts."]]),
        )
    )
    events = await collect(chat.run_turn(USER, "How many parts?"))
    assert events[-1]["coverage"]["status"] == "complete"
    assert len(executor.requests) == 1


async def test_a_root_adds_dynamic_children_that_run_and_count_in_coverage() -> None:
    child = task("gear", "What is Gear made of?", manager="part")
    root = task("parts", "Which parts exist?", manager="part")
    executor = FunctionProvider(
        lambda messages, tools: (
            [tool_call("add_subtasks", {"children": [child]})]
            if "Which parts exist?" in messages[1].content and len(messages) == 2
            else [tool_call("query", {"manager": "PartManager", "filters": {"name": "Gear"}})]
            if "Gear" in messages[1].content
            else [tool_call("query", {"manager": "PartManager"})]
        )
    )
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(root)]]),
            executor=executor,
            synthesizer=ScriptedProvider([["Bolt, Bearing and Gear; Gear is cobalt."]]),
        )
    )
    events = await collect(chat.run_turn(USER, "Which parts exist, and what is Gear made of?"))
    assert events[-1]["coverage"] == {
        "status": "complete",
        "resolved": 2,
        "total": 2,
        "unresolved": [],
    }
    assert {e["task_id"] for e in events if e["type"] == "tool_result"} == {"parts", "gear"}
    # Children get no add_subtasks tool: they never have children of their own.
    child_requests = [r for r in executor.requests if "Gear" in r.messages[1].content]
    assert child_requests and all("add_subtasks" not in r.tool_names for r in child_requests)


async def test_a_regeneration_writes_a_new_answer_from_the_same_evidence() -> None:
    guard = orbital(side="output", name="no_guess")(
        lambda ctx: (
            Verdict.block(guidance="Name the part.") if "maybe" in ctx.message else Verdict.allow()
        )
    )
    executor = ScriptedProvider([[tool_call("query", {"manager": "PartManager"})]])
    synthesizer = ScriptedProvider([["maybe some parts"], ["Bolt, Bearing and Gear."]])
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(task("p", "Which parts exist?", manager="part"))]]),
            executor=executor,
            synthesizer=synthesizer,
        ),
        atom_config=AtomConfig(output=[guard]),
    )
    events = await collect(chat.run_turn(USER, "Which parts exist?"))
    assert events[-1]["reply"] == "Bolt, Bearing and Gear."
    assert len(executor.requests) == 1 and len(synthesizer.requests) == 2
    assert "Name the part." in synthesizer.requests[1].messages[-1].content


async def test_the_askers_rate_limit_stops_a_planned_turn() -> None:
    budget = Budget(allowed=1)
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(task("p", "Which parts exist?", manager="part"))]]),
            executor=ScriptedProvider([[tool_call("query", {"manager": "PartManager"})]]),
        )
    )
    events = await collect(chat.run_turn(USER, "Which parts exist?", budget=budget))
    assert events[-1]["code"] == "rate_limited"
    assert events[-1]["retry_after_seconds"] == 13
    assert len(budget.recorded) == 1  # the planner's usage was counted


async def test_a_planned_nucleus_runs_in_a_plain_atom_without_django() -> None:
    provider_roles = roles(
        planner=ScriptedProvider([[plan(task("p", "Which parts exist?", manager="part"))]]),
        executor=ScriptedProvider([[tool_call("query", {"manager": "PartManager"})]]),
        synthesizer=ScriptedProvider([["Bolt, Bearing and Gear."]]),
    )
    atom = Atom("planned", PlannedNucleus(planned_turns(provider_roles), Toolset(toy_registry())))
    result = await atom.chat("Which parts exist?")
    assert result.reply == "Bolt, Bearing and Gear."
    assert result.report.planned is not None
    assert result.report.planned.coverage is not None
    assert result.report.planned.coverage.status == "complete"


async def test_iter_planned_read_events_gives_the_wire_events_of_a_prepared_read() -> None:
    provider_roles = roles(
        planner=ScriptedProvider([[plan(task("p", "Which parts exist?", manager="part"))]]),
        executor=ScriptedProvider([[tool_call("query", {"manager": "PartManager"})]]),
        synthesizer=ScriptedProvider([["Three parts."]]),
    )
    planned = planned_turns(provider_roles)
    messages = [Message.user("Which parts exist?")]
    prepared = await prepare_planned_turn(
        "Which parts exist?", [], planned.settings, [], providers=planned.providers
    )
    scope = PlannedScope(planned, Toolset(toy_registry()), USER)
    events = [
        e
        async for e in iter_planned_read_events(
            prepared, scope=scope, conversation="c1", messages=messages
        )
    ]
    assert kinds(events) == ["tool_call", "tool_result", "text_chunk", "done"]
    assert events[0]["task_id"] == "p"
    assert events[-1]["coverage"]["status"] == "complete"


async def test_iter_planned_read_events_ends_in_one_stable_error() -> None:
    provider_roles = roles(
        planner=ScriptedProvider([[plan(task("p", "Which widgets exist?", manager="widget"))]])
    )
    planned = planned_turns(provider_roles)
    prepared = await prepare_planned_turn(
        "Which widgets?", [], planned.settings, [], providers=planned.providers
    )
    scope = PlannedScope(planned, Toolset(toy_registry()))
    events = [
        e
        async for e in iter_planned_read_events(
            prepared, scope=scope, conversation=None, messages=[Message.user("Which widgets?")]
        )
    ]
    assert events == [
        {
            "type": "error",
            "code": "manager_unresolved",
            "message": "I could not resolve the required application data.",
        }
    ]


async def test_a_failing_executor_role_gives_way_to_the_stronger_one() -> None:
    store = MemoryStore()
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(task("p", "Which parts exist?", manager="part"))]]),
            executor=ScriptedProvider([[ProviderError("the server is down", provider="scripted")]]),
            complex_executor=ScriptedProvider([[tool_call("query", {"manager": "PartManager"})]]),
            synthesizer=ScriptedProvider([["Bolt, Bearing and Gear."]]),
        ),
        store=store,
    )
    events = await collect(chat.run_turn(USER, "Which parts exist?"))
    assert events[-1]["coverage"]["status"] == "complete"
    turn = await store.get_turn(events[-1]["turn_id"])
    assert turn is not None and turn.report is not None
    assert turn.report["planned"]["tasks"][0]["role"] == "complex_executor"


def test_with_provider_validates_its_settings() -> None:
    planned = PlannedTurns.with_provider(ScriptedProvider([]), max_concurrent_tasks=2)
    assert planned.settings.max_concurrent_tasks == 2
    assert len({id(p) for p in planned.providers.values()}) == 1
    with pytest.raises(ChatConfigurationError, match="max_concurrent_tasks"):
        PlannedTurns.with_provider(ScriptedProvider([]), max_concurrent_tasks=0)
    with pytest.raises(ChatConfigurationError, match="max_concurent_tasks"):
        PlannedTurns.with_provider(ScriptedProvider([]), max_concurent_tasks=2)


class SlowToolset(Toolset):
    """The toy tools, each call suspending first (as an ORM call in its thread does)."""

    started = 0

    async def call(self, name: str, args: Any, context: Any) -> dict[str, Any]:
        SlowToolset.started += 1
        await asyncio.sleep(0.02)
        return await super().call(name, args, context)


async def test_identical_calls_of_concurrent_tasks_run_once_and_are_shared() -> None:
    same = [tool_call("query", {"manager": "MaterialManager", "fields": ["name"]})]
    tasks = [task(n, f"List materials {n}", manager="material") for n in ("a", "b", "c")]
    SlowToolset.started = 0
    chat = ChatService(
        store=MemoryStore(),
        provider=ScriptedProvider([]),
        toolset=SlowToolset(toy_registry()),
        planned=planned_turns(
            roles(
                planner=ScriptedProvider([[plan(*tasks)]]),
                executor=FunctionProvider(lambda messages, tools: same),
                synthesizer=ScriptedProvider([["Steel, Aluminum, Cobalt."]]),
            )
        ),
    )
    events = await collect(chat.run_turn(USER, "Materials?"))
    assert events[-1]["coverage"]["resolved"] == 3
    assert SlowToolset.started == 1
    assert kinds(events).count("tool_call") == 1


async def test_repeating_its_own_call_never_meets_a_second_requirement() -> None:
    parts = tool_call("query", {"manager": "PartManager", "fields": ["name"]})
    both = task(
        "both",
        "Which parts and which materials exist?",
        manager="part",
        needs=[{"kind": "query"}, {"kind": "query"}],
    )
    executor = ScriptedProvider(
        [[parts], [parts], [tool_call("query", {"manager": "MaterialManager"})]]
    )
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(both)]]),
            executor=executor,
            synthesizer=ScriptedProvider([["Three parts, three materials."]]),
        )
    )
    events = await collect(chat.run_turn(USER, "Parts and materials?"))
    assert events[-1]["coverage"]["status"] == "complete"
    assert len(executor.requests) == 3  # the repeated call did not count as the second query


async def test_a_reader_that_stops_ends_the_tasks_at_once() -> None:
    release = asyncio.Event()
    cancelled: list[str] = []

    async def stuck(messages: list[Any], tools: list[Any]) -> Any:
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancelled.append("executor")
            raise
        return [tool_call("query", {"manager": "PartManager"})]

    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(task("p", "Which parts exist?", manager="part"))]]),
            executor=FunctionProvider(stuck),
        )
    )
    stream = chat.run_turn(USER, "Which parts exist?")
    reading = asyncio.ensure_future(stream.__anext__())
    await asyncio.sleep(0.05)  # the executor waits inside its provider request
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    await stream.aclose()
    assert cancelled == ["executor"]  # cancelled and awaited before aclose returned


async def test_iter_planned_read_events_reports_the_askers_rate_limit() -> None:
    provider_roles = roles(
        planner=ScriptedProvider([[plan(task("p", "Which parts exist?", manager="part"))]]),
        executor=ScriptedProvider([[tool_call("query", {"manager": "PartManager"})]]),
    )
    planned = planned_turns(provider_roles)
    prepared = await prepare_planned_turn(
        "Which parts?", [], planned.settings, [], providers=planned.providers
    )
    scope = PlannedScope(planned, Toolset(toy_registry()))
    callbacks = SchedulerCallbacks(rate_budget=Budget(allowed=0))
    events = [
        e
        async for e in iter_planned_read_events(
            prepared,
            scope=scope,
            conversation=None,
            messages=[Message.user("Which parts?")],
            callbacks=callbacks,
        )
    ]
    assert [(e["code"], e["retry_after_seconds"]) for e in events] == [("rate_limited", 13)]


async def test_the_planner_sees_the_catalog_lines_of_the_managers_it_is_shown_only() -> None:
    catalog = {
        "PartManager": {
            "domain": "manufacturing",
            "aliases": ["component"],
            "use_when": "Designed or bought components.",
            "distinguish_from": [],
        },
        "ProjectManager": {
            "domain": "portfolio",
            "aliases": ["programme"],
            "use_when": "Customer programmes.",
            "distinguish_from": [],
        },
    }
    planner = ScriptedProvider([[plan(task("p", "Which components exist?", manager="part"))]])
    chat = planned_service(
        roles(
            planner=planner,
            executor=ScriptedProvider([[tool_call("query", {"manager": "PartManager"})]]),
            synthesizer=ScriptedProvider([["Bolt, Bearing and Gear."]]),
        ),
        catalog=catalog,
    )
    await collect(chat.run_turn(USER, "Which components exist?"))
    prompt = "\n".join(m.content for m in planner.requests[0].messages)
    assert "Designed or bought components." in prompt
    assert "Customer programmes." not in prompt  # not a candidate for this question


async def test_a_request_over_its_own_time_cap_gives_way_to_the_stronger_role() -> None:
    store = MemoryStore()
    chat = planned_service(
        roles(
            planner=ScriptedProvider([[plan(task("p", "Which parts exist?", manager="part"))]]),
            executor=ScriptedProvider([[Delay(5), tool_call("query", {"manager": "PartManager"})]]),
            complex_executor=ScriptedProvider([[tool_call("query", {"manager": "PartManager"})]]),
            synthesizer=ScriptedProvider([["Bolt, Bearing and Gear."]]),
        ),
        store=store,
        request_timeout_seconds=0.05,
    )
    events = await collect(chat.run_turn(USER, "Which parts exist?"))
    assert events[-1]["coverage"]["status"] == "complete"
    turn = await store.get_turn(events[-1]["turn_id"])
    assert turn is not None and turn.report is not None
    assert turn.report["planned"]["tasks"][0]["role"] == "complex_executor"
