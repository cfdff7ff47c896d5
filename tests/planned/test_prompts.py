import json

from chatomon import schemas
from chatomon.chat.tools.definitions import aggregate_definition, query_definition
from chatomon.data.fixtures import toy_registry
from chatomon.planned.catalog import load_manager_catalog
from chatomon.planned.models import CALCULATION_OPERATIONS, EvidenceRequirement, PlannedTask
from chatomon.planned.prompts import (
    HISTORY_MESSAGE_CHARS,
    HISTORY_MESSAGES,
    MAX_REPLAYED_PLAN_CHARS,
    correction_message,
    executor_messages,
    planner_messages,
    replayed_plan,
    synthesis_messages,
)
from chatomon.planned.provider_calls import prompt_chars
from chatomon.providers.base import Message, ToolCallEvent
from chatomon.schemas import PlannedCoverage, PlannedUnresolved

QUESTION = "Which parts use steel?"
TOY_CATALOG = {
    "MaterialManager": {
        "domain": "manufacturing",
        "aliases": ["material", "alloy"],
        "use_when": "The question concerns what parts are made of.",
        "distinguish_from": ["PartManager"],
    },
    "PartManager": {
        "domain": "manufacturing",
        "aliases": ["part", "component"],
        "use_when": "The question concerns designed or purchased components.",
        "distinguish_from": ["MaterialManager"],
    },
}
STEEL_PARTS = {
    "data": [{"id": 1, "name": "Bolt", "material": 1}],
    "total_count": 1,
    "has_more": False,
}
COMPLETE = PlannedCoverage(status="complete", resolved=1, total=1)


def toy_planner_request() -> list[Message]:
    index = toy_registry().schema_index()
    catalog = load_manager_catalog(TOY_CATALOG, index)
    lines = [f"{name}: {index.get(name).description}" for name in index.names]
    return planner_messages(QUESTION, [], catalog.summary_lines(), lines)


def steel_task() -> PlannedTask:
    return PlannedTask(
        "t1",
        QUESTION,
        (
            EvidenceRequirement("query", "parts made of steel"),
            EvidenceRequirement("calculation", operation="count"),
        ),
        manager_hint="PartManager",
    )


def toy_schema_slice() -> list[dict[str, object]]:
    index = toy_registry().schema_index()
    return [index.get(name).to_json() for name in ("PartManager", "MaterialManager")]


def test_the_planner_request_is_instructions_then_the_question():
    messages = toy_planner_request()

    assert [m.role for m in messages] == ["system", "user"]
    system = messages[0].content
    assert messages[1].content == QUESTION
    assert '"intent":"read"' in system
    assert '{"intent":"mutation"}' in system
    assert ", ".join(CALCULATION_OPERATIONS) in system
    assert "PartManager: Designed or purchased components." in system
    assert "Catalog:" in system


def test_the_planner_request_leaves_out_empty_sections():
    system = planner_messages(QUESTION, [], [], [])[0].content

    assert "Data sets:" not in system
    assert "Catalog:" not in system


def test_the_planner_prompt_for_the_toy_registry_is_short():
    # The whole toy read has 15,000 characters; the planner takes a small share of them.
    assert prompt_chars(toy_planner_request(), []) <= 2_500


def test_the_planner_sees_only_the_latest_texts_of_the_conversation():
    call = ToolCallEvent("c1", "query", {"manager": "PartManager"})
    history = [
        Message.user("first question"),
        Message.assistant("first answer"),
        Message.user("second question"),
        Message.assistant("", [call]),
        Message.tool(call, {"data": []}),
        Message.assistant("x" * 1_000),
        Message.user("   "),
        Message.user("third question"),
    ]

    messages = planner_messages(QUESTION, history, [], [])[1:-1]

    assert len(messages) == HISTORY_MESSAGES
    assert [m.role for m in messages] == ["assistant", "user", "assistant", "user"]
    assert messages[0].content == "first answer"
    assert messages[2].content == "x" * (HISTORY_MESSAGE_CHARS - 1) + "…"
    assert messages[3].content == "third question"
    assert all(not m.tool_calls for m in messages)


def test_the_pipelines_history_messages_are_read_as_well():
    history = [
        schemas.Message(role="user", content="Which materials are there?"),
        schemas.Message(role="assistant", content="Steel, aluminum and cobalt."),
    ]

    messages = planner_messages(QUESTION, history, [], [])

    assert messages[1:] == [
        Message.user("Which materials are there?"),
        Message.assistant("Steel, aluminum and cobalt."),
        Message.user(QUESTION),
    ]


def test_a_refused_plan_is_replayed_cut_to_its_limit():
    assert replayed_plan('{"intent":"read"}') == Message.assistant('{"intent":"read"}')
    long = replayed_plan("x" * 10_000)
    assert long.role == "assistant"
    assert len(long.content) == MAX_REPLAYED_PLAN_CHARS
    assert long.content.endswith("…")


def test_the_correction_names_what_the_validator_refused():
    message = correction_message("tasks[0].depends_on: unknown task 't9'")

    assert message.role == "user"
    assert "tasks[0].depends_on: unknown task 't9'" in message.content
    assert "JSON only" in message.content


def test_an_executor_sees_its_task_its_needs_and_only_its_schema_slice():
    schema_slice = toy_schema_slice()

    system, user = executor_messages(steel_task(), schema_slice, [])

    assert user.role == "user"
    assert user.content == (
        f"Task: {QUESTION}\nNeeds: query: parts made of steel; calculation (count)"
    )
    assert json.dumps(schema_slice[0], separators=(",", ":"), ensure_ascii=False) in system.content
    assert "ProjectManager" not in system.content
    assert "earlier tasks" not in system.content


def test_an_executor_sees_the_evidence_of_its_dependencies():
    evidence = [{"id": "e1", "kind": "query", "data": STEEL_PARTS}]

    system = executor_messages(steel_task(), toy_schema_slice(), evidence)[0].content

    assert "Results of earlier tasks:" in system
    assert json.dumps(evidence[0], separators=(",", ":")) in system


def test_the_synthesizer_sees_the_evidence_and_the_question():
    evidence = [{"id": "e1", "kind": "query", "data": STEEL_PARTS}]

    system, user = synthesis_messages(QUESTION, evidence, COMPLETE)

    assert user.content == QUESTION
    assert json.dumps(evidence[0], separators=(",", ":")) in system.content
    assert "partial" not in system.content


def test_a_partial_coverage_asks_for_a_partial_answer():
    coverage = PlannedCoverage(
        status="partial",
        resolved=1,
        total=3,
        unresolved=(
            PlannedUnresolved(task_id="t2", reason="dependency_blocked"),
            PlannedUnresolved(task_id="t3", reason="budget_exhausted"),
        ),
    )

    system = synthesis_messages(QUESTION, [], coverage)[0].content

    assert "2 of 3 parts" in system
    assert "partial" in system
    assert "(none)" in system
    assert "dependency_blocked" not in system


def test_a_whole_toy_read_stays_within_its_prompt_budget():
    # Planner, an executor's two rounds (a query, then its text), the synthesizer.
    tools = [query_definition(50), aggregate_definition()]
    executor = executor_messages(steel_task(), toy_schema_slice(), [])
    call = ToolCallEvent(
        "c1", "query", {"manager": "PartManager", "filters": {"material__name": "Steel"}}
    )
    second_round = [*executor, Message.assistant("", [call]), Message.tool(call, STEEL_PARTS)]
    evidence = [{"id": "e1", "kind": "query", "data": STEEL_PARTS}]

    total = (
        prompt_chars(toy_planner_request(), [])
        + prompt_chars(executor, tools)
        + prompt_chars(second_round, tools)
        + prompt_chars(synthesis_messages(QUESTION, evidence, COMPLETE), [])
    )

    assert total <= 15_000
    assert prompt_chars(synthesis_messages(QUESTION, evidence, COMPLETE), []) <= 1_000
