"""Which writes LocalProvider lets its model make: rows it has seen, when the user asks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chatomon.providers import DoneEvent, Message, ToolCall, ToolCallEvent
from chatomon.providers import local_template as template
from chatomon.providers.base import ToolDefinition
from chatomon.providers.local import LocalProvider
from chatomon.providers.local_writes import (
    SeenRows,
    asks_for_missing_removal,
    asks_for_write,
    guessed_fields,
    reads_only,
    seen_rows,
    writes_only,
)
from tests.providers.fake_llama import FakeLlamaCpp, events, grammar_names

QUERY = ToolDefinition(
    "query",
    "Read rows.",
    {
        "type": "object",
        "properties": {"manager": {"type": "string", "enum": ["ProjectManager"]}},
        "required": ["manager"],
    },
)
MUTATE = ToolDefinition(
    "mutate",
    "Change data.",
    {
        "type": "object",
        "properties": {
            "mutation": {"type": "string", "enum": ["renameProject", "addPartToProject"]},
            "input": {"type": "object"},
        },
        "required": ["mutation", "input"],
    },
)
TOOLS = [QUERY, MUTATE]
LOOKUP = ToolCall("call_1_0", "query", {"manager": "ProjectManager"})
MERCURY = {"data": [{"id": 2, "name": "Mercury", "lead": {"id": 7, "name": "Ada"}}]}


def rename(project_id: Any, name: str = "Gemini") -> dict[str, Any]:
    return {"mutation": "renameProject", "input": {"project_id": project_id, "name": name}}


def looked_up(user: str, result: Any = MERCURY) -> list[Message]:
    return [Message.user(user), Message.assistant("", [LOOKUP]), Message.tool(LOOKUP, result)]


def mutate(*mutations: str) -> ToolDefinition:
    properties = {"mutation": {"type": "string", "enum": list(mutations)}, "input": {}}
    return ToolDefinition("mutate", "Change data.", {"type": "object", "properties": properties})


@pytest.mark.parametrize(
    ("message", "asks"),
    [
        ("Rename the Mercury project to Gemini.", True),
        ("Make the Bolt out of Aluminum.", True),
        ("set the unit cost of part P-1001 to 14.50", True),
        ("What do the material densities add up to?", False),
        ("Add part 3 to Apollo", False),  # "add" asks for a change where a mutation says so
        ("Give me the part list.", False),
        ("Which projects are made of steel?", False),  # "made" is no request
    ],
)
def test_a_change_is_asked_for_by_a_change_word(message: str, asks: bool) -> None:
    tools = [QUERY, mutate("renameProject")]
    assert asks_for_write([Message.user("Rename it"), Message.user(message)], tools) is asks


def test_the_verb_an_allowed_mutation_starts_with_asks_for_a_change() -> None:
    asked = [Message.user("Add part 3 to Apollo")]
    assert asks_for_write(asked, [QUERY, mutate("renameProject", "addPartToProject")])
    archive = [Message.user("please archive Apollo")]
    assert asks_for_write(archive, [QUERY, mutate("ArchiveProject")])  # capitalised too


@pytest.mark.parametrize(
    ("message", "tools", "missing"),
    [
        ("Delete all the projects.", [QUERY, mutate("renameProject")], True),
        ("please REMOVE the bolt", [QUERY], True),  # no mutate at all: nothing removes
        ("Remove part 3 from Apollo", [QUERY, mutate("removePartFromProject")], False),
        ("Drop the Bolt", [QUERY, mutate("deletePart")], False),  # a removal is offered
        ("Which parts were removed or deleted?", [QUERY, mutate("renameProject")], False),
        ("Rename Mercury", [QUERY, mutate("renameProject")], False),
        # a change asked beside the removal is still made
        ("Rename Mercury to Gemini and remove the Bolt", [QUERY, mutate("renameProject")], False),
        # a removal anywhere in a mutation's name
        ("Delete the Bolt", [QUERY, mutate("productDelete", "renameProject")], False),
        ("Delete the Bolt", [QUERY, mutate("bulk_delete_parts")], False),
    ],
)
def test_a_removal_no_mutation_makes_is_one_to_decline(
    message: str, tools: list[ToolDefinition], missing: bool
) -> None:
    assert asks_for_missing_removal([Message.user(message)], tools) is missing


async def test_a_removal_no_mutation_makes_is_answered_with_no_tool_offered(
    fake: FakeLlamaCpp,
) -> None:
    fake.script = [["I cannot delete projects."]]
    got = await events(LocalProvider(), [Message.user("Delete all the projects.")], TOOLS)
    assert [c["grammar"] for c in fake.calls] == [None]
    assert not [e for e in got if isinstance(e, ToolCallEvent)]


def test_no_change_is_asked_for_where_no_mutate_is_offered() -> None:
    assert not asks_for_write([Message.user("Rename Mercury")], [QUERY])


def test_rows_seen_are_tool_results_ids_by_kind_and_numbers_the_user_wrote() -> None:
    parts = ToolCall("call_4_0", "query_part_manager", {})
    history = [
        *looked_up("Rename project 4, or the one costing 14.50"),
        Message.assistant("Project 9 it is."),  # the model's own words show nothing
        Message.assistant("", [parts]),
        Message.tool(parts, '{"data": [{"id": 5, "materials": [{"id": 6}]}]}'),  # JSON text
    ]
    seen = seen_rows(history, [*TOOLS, ToolDefinition("query_supplier_manager", "Suppliers.")])
    assert seen.by_kind == {"project": {2}, "lead": {7}, "part": {5}, "material": {6}}
    assert seen.any_kind == {4}  # 14.50 is no id
    assert seen.managers == {"project", "supplier"}  # query's enum, a direct tool


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("Rename project 2.", {2}),
        ("Rename project 2, then 3!", {2, 3}),
        ("Set the cost of P-1001 to 14.50", set()),  # a part number, a price: no id
        ("Use v2 of PRJ-101", set()),
        ("On 2024-01-05 at 10:30, 1,000 parts", set()),  # a date, a time, thousands
    ],
)
def test_the_numbers_a_user_writes_name_rows(text: str, numbers: set[int]) -> None:
    assert seen_rows([Message.user(text)]).any_kind == numbers


def test_plural_relations_name_the_kind_of_their_rows() -> None:
    read = ToolCall("call_1_0", "query", {"manager": "ProductManager"})
    rows = {"data": [{"id": 1, "categories": [{"id": 9}], "boxes": [{"id": 4}]}]}
    history = [Message.user("x"), Message.assistant("", [read]), Message.tool(read, rows)]
    seen = seen_rows(history, [ToolDefinition("query_box_manager", "Boxes.")])
    assert seen.by_kind == {"product": {1}, "category": {9}, "box": {4}}
    assert seen.holds("category_id", 9) and not seen.holds("product_id", 9)
    assert seen.holds("box_id", 4) and not seen.holds("box_id", 9)  # a manager's kind


@pytest.mark.parametrize(
    ("relation", "field"),
    [("statuses", "status_id"), ("addresses", "address_id"), ("cases", "case_id"),
     ("glasses", "glass_id"), ("batches", "batch_id"), ("leads", "lead_id")],
)  # fmt: skip
def test_a_plural_relation_and_its_id_field_name_one_kind(relation: str, field: str) -> None:
    read = ToolCall("call_1_0", "query", {"manager": "OrderManager"})
    rows = {"data": [{"id": 1, relation: [{"id": 5}]}]}
    history = [Message.user("x"), Message.assistant("", [read]), Message.tool(read, rows)]
    kinds = {"order", field.removesuffix("_id")}
    seen = seen_rows(history, [ToolDefinition(f"query_{k}_manager", "Rows.") for k in kinds])
    assert seen.holds(field, 5) and not seen.holds(field, 1)


def test_a_row_a_write_returned_may_be_named_next() -> None:
    create = ToolCall("call_1_0", "mutate", {"mutation": "createProject", "input": {}})
    executed = {"status": "executed", "result": {"id": 12, "name": "Gemini"}}
    history = [Message.user("Create Gemini"), Message.assistant("", [create])]
    seen = seen_rows([*history, Message.tool(create, executed)], TOOLS)
    assert seen.holds("project_id", 12) and seen.by_kind == {}


def test_groups_of_an_aggregate_show_the_rows_their_keys_name() -> None:
    # A group key as written (group_by ["material__id"]) names the material's row.
    count = ToolCall("call_1_0", "aggregate", {"manager": "PartManager"})
    group = {"material__id": 3, "material__name": "Cobalt", "supplier__country__id": 8}
    groups = {"groups": [{"group": group, "values": {"count": 2}}], "has_more": False}
    history = [Message.user("Parts per material?"), Message.assistant("", [count])]
    seen = seen_rows([*history, Message.tool(count, groups)])
    assert seen.by_kind == {"material": {3}, "country": {8}}


@pytest.mark.parametrize(
    ("field", "number", "held"),
    [
        ("project_id", 2, True),
        ("project_id", 5, False),  # a part's id is no project's
        ("project_id", 4, True),  # the user wrote it
        ("material_id", 6, True),
        ("supplier_id", 5, True),  # no supplier was read: any row's id
        ("supplier_id", 8, False),
        ("id", 7, True),
        ("customer_id", 2, False),  # a manager the tools read: none of its rows was read
        ("customer_id", 4, True),
    ],
)
def test_a_field_names_a_row_of_its_kind(field: str, number: int, held: bool) -> None:
    rows = {"project": {2}, "part": {5}, "lead": {7}, "material": {6}}
    by_kind = {kind: frozenset(ids) for kind, ids in rows.items()}
    seen = SeenRows(by_kind, any_kind=frozenset({4}), managers=frozenset({"customer"}))
    assert seen.holds(field, number) is held


SEEN = SeenRows({"project": frozenset({2})}, frozenset())


@pytest.mark.parametrize(
    ("value", "guessed"),
    [
        (2, []),
        ("2", []),
        (3, ["project_id"]),
        (" 3 ", ["project_id"]),  # digits: an id to a mutation reading them as one
        ("PRJ-101", []),  # a natural key: the mutation resolves it
        (None, []),  # an optional reference left out: the mutation's input decides
        (True, []),
    ],
)
def test_a_row_named_by_an_unseen_number_is_a_guess(value: Any, guessed: list[str]) -> None:
    assert guessed_fields(rename(value), SEEN) == guessed


def test_only_id_fields_are_read_as_rows() -> None:
    arguments = {"mutation": "m", "input": {"id": 9, "count": 9, "supplier_id": 8}}
    assert guessed_fields(arguments, SEEN) == ["id", "supplier_id"]
    assert guessed_fields({"mutation": "m", "input": "not an object"}, SEEN) == []


def test_after_rows_the_write_asked_for_is_offered_alone() -> None:
    history = looked_up("Rename the Mercury project to Gemini.")
    offered = template.offered_tools(history, TOOLS, 3, after_rows=writes_only(TOOLS))
    assert [tool.name for tool in offered] == ["mutate"]
    assert template.offered_tools(history, TOOLS, 3) == []  # by default nothing: answer


def test_the_reads_are_every_tool_but_mutate() -> None:
    assert [tool.name for tool in reads_only(TOOLS)] == ["query"]
    assert [tool.name for tool in writes_only(TOOLS)] == ["mutate"]


def call(arguments: dict[str, Any], name: str = "mutate") -> list[str]:
    """The model's output: one call, as one piece."""
    return [json.dumps({"name": name, "arguments": arguments})]


async def test_a_write_on_a_guessed_id_is_withheld_and_the_model_asked_to_read(
    fake: FakeLlamaCpp,
) -> None:
    # Asked to rename Mercury before any lookup, the model named project 1 (Apollo).
    fake.script = [call(rename(1)), call({"manager": "ProjectManager"}, "query")]
    got = await events(LocalProvider(), [Message.user("Rename Mercury to Gemini")], TOOLS)
    assert [(e.name, e.args) for e in got if isinstance(e, ToolCallEvent)] == [
        ("query", {"manager": "ProjectManager"})
    ]
    assert [grammar_names(c, TOOLS) for c in fake.calls] == [{"query", "mutate"}, {"query"}]
    # Both runs are counted (the stand-in reads a token per word of the prompt).
    done = got[-1]
    assert isinstance(done, DoneEvent) and done.usage is not None
    assert done.usage.input_tokens == sum(len(c["prompt"].split()) for c in fake.calls)


async def test_after_the_lookup_the_write_on_the_row_read_goes_through(
    fake: FakeLlamaCpp,
) -> None:
    fake.script = [call(rename(2))]
    history = looked_up("Rename the Mercury project to Gemini.")
    got = await events(LocalProvider(), history, TOOLS)
    assert [(e.name, e.args) for e in got if isinstance(e, ToolCallEvent)] == [
        ("mutate", rename(2))
    ]
    assert [grammar_names(c, TOOLS) for c in fake.calls] == [{"mutate"}]


async def test_a_write_guessed_after_a_lookup_is_withheld_and_every_read_offered(
    fake: FakeLlamaCpp,
) -> None:
    # After reading project 2, a write naming project 5 looks it up first.
    fake.script = [call(rename(5)), call({"manager": "ProjectManager"}, "query")]
    history = looked_up("Rename the Mercury project to Gemini.")
    got = await events(LocalProvider(), history, TOOLS)
    assert [e.name for e in got if isinstance(e, ToolCallEvent)] == ["query"]
    assert [grammar_names(c, TOOLS) for c in fake.calls] == [{"mutate"}, {"query"}]


async def test_after_rows_a_question_is_answered_with_no_tool_offered(
    fake: FakeLlamaCpp,
) -> None:
    fake.script = [["Mercury."]]
    await events(LocalProvider(), looked_up("Which project is led by Ada?"), TOOLS)
    assert [c["grammar"] for c in fake.calls] == [None]


@pytest.mark.parametrize(
    "message", ["Which projects were removed?", "Which project is the newest?", "Gemini, please"]
)
async def test_mutate_is_offered_only_when_the_user_asks_for_a_change(
    fake: FakeLlamaCpp,
    message: str,
) -> None:
    fake.script = [["No."], ["Yes."]]
    provider = LocalProvider()
    await events(provider, [Message.user(message)], TOOLS)
    await events(provider, [Message.user("Rename the Mercury project to Gemini.")], TOOLS)
    assert [grammar_names(c, TOOLS) for c in fake.calls] == [{"query"}, {"query", "mutate"}]
