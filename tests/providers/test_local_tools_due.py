"""The tools LocalProvider offers next: none after a decided write or after rows read."""

from __future__ import annotations

from typing import Any

import pytest

from chatomon.providers import local_template as template
from chatomon.providers.base import Message, ToolCall, ToolDefinition

MUTATE = ToolCall("call_1_0", "mutate", {"mutation": "assignPartToProject", "input": {}})
QUERY = ToolCall("call_3_0", "query", {"manager": "PartManager"})
AGGREGATE = ToolCall("call_3_1", "aggregate", {"manager": "PartManager"})
NAMES = ("get_manager_schema", "query", "query_part_manager", "aggregate", "calculate", "mutate")
TOOLS = [ToolDefinition(name, f"The {name} tool.") for name in NAMES]
ALL = list(NAMES)


def after(*rounds: tuple[ToolCall, Any] | list[tuple[ToolCall, Any]]) -> list[Message]:
    """The history after these tool rounds (a list: one round of several calls)."""
    history = [Message.user("Assign part P-1002 to project PRJ-101")]
    for round_ in rounds:
        calls = round_ if isinstance(round_, list) else [round_]
        history.append(Message.assistant("", [call for call, _ in calls]))
        history += [Message.tool(call, result) for call, result in calls]
    return history


def offered(history: list[Message], max_tool_rounds: int = 3) -> list[str]:
    return [tool.name for tool in template.offered_tools(history, TOOLS, max_tool_rounds)]


@pytest.mark.parametrize("status", ["executed", "unchanged", "rejected", "timed_out"])
def test_a_decided_write_leaves_only_the_answer(status: str) -> None:
    assert offered(after((MUTATE, {"status": status}))) == []


@pytest.mark.parametrize(
    "history",
    [
        after(),
        # a failed write: the model may correct its call
        after((MUTATE, {"status": "error", "code": "invalid_input"})),
        # a read after the write: the latest round decides
        after((MUTATE, {"status": "executed"}), (QUERY, {"data": []})),
        after((QUERY, {"data": []})),
        after((AGGREGATE, {"groups": [], "has_more": False})),
        # rows, then a failed read in the latest round: the latest round decides
        after((QUERY, {"data": [{"id": 1}]}), (QUERY, {"status": "error"})),
        # rows beside an error in one round: every tool stays, to correct the call
        after([(QUERY, {"data": [{"id": 1}]}), (AGGREGATE, {"status": "error"})]),
        after((MUTATE, "not JSON")),
        # a new user message starts over
        [*after((MUTATE, {"status": "unchanged"})), Message.user("And PRJ-102?")],
    ],
)
def test_every_tool_stays_offered_otherwise(history: list[Message]) -> None:
    assert offered(history) == ALL


def test_the_round_cap_still_holds() -> None:
    history = after((QUERY, {"data": []}), (QUERY, {"data": []}))
    assert offered(history, 2) == []
    assert offered(history, 3) == ALL


@pytest.mark.parametrize(
    "result",
    [
        {"data": [{"id": 1, "name": "Bolt"}], "total_count": 1},
        '{"data": [{"id": 1}]}',  # stored as text
    ],
)
def test_rows_read_leave_only_the_answer(result: Any) -> None:
    # Offered tools again, Qwen2.5-Coder-1.5B asked for the same rows again; offered the
    # tools that read no rows, it invented a write. It answers, and a write is asked next.
    assert offered(after((QUERY, result))) == []
    groups = {"groups": [{"group": {}, "values": {"count": 3}}], "has_more": False}
    assert offered(after((AGGREGATE, groups))) == []
    assert offered(after([(QUERY, result), (AGGREGATE, groups)])) == []


def test_a_result_stored_as_text_is_read_too() -> None:
    stored = Message(
        role="tool", content='{"status": "unchanged"}', tool_call_id="c", tool_name="mutate"
    )
    assert offered([Message.user("x"), stored]) == []


@pytest.mark.parametrize(
    ("round_", "forced"),
    [
        ((QUERY, {"data": [], "hint": "query PartManager ...", "found_in": "PartManager"}), True),
        # "try name__icontains, otherwise there is none": none may be the answer
        ((AGGREGATE, {"groups": [], "has_more": False, "hint": "try name__icontains"}), False),
        ((QUERY, {"data": [], "total_count": 0}), False),
        ((QUERY, {"data": [{"id": 1}], "found_in": "X"}), False),  # rows: the answer is there
        ((QUERY, {"status": "error", "code": "unknown_field"}), False),  # may still answer
        ([(QUERY, {"data": [], "found_in": "X"}), (AGGREGATE, {"status": "error"})], False),
    ],
)
def test_an_empty_read_of_a_name_found_elsewhere_must_be_followed_by_a_call(
    round_: Any, forced: bool
) -> None:
    assert template.must_call(after(round_)) is forced
    assert template.must_call([Message.user("x")]) is False


def test_the_round_cap_wins_over_a_call_that_is_due() -> None:
    found = {"data": [], "found_in": "PartManager"}
    history = after((QUERY, found), (QUERY, found))
    assert template.must_call(history)
    assert offered(history, 2) == []  # no tool offered: the model answers (no grammar)


def test_a_failed_call_is_remembered_as_sent_until_the_next_user_message() -> None:
    bad = ToolCall("call_1_0", "query", {"manager": "Nope", "limit": 0})
    slow = ToolCall("call_1_1", "aggregate", {"manager": "PartManager"})
    history = after(
        [(bad, {"status": "error", "code": "unknown_manager"}),
         (slow, {"status": "error", "code": "query_timeout"})],  # may pass a second time
        (QUERY, {"data": [{"id": 1}]}),
    )  # fmt: skip
    assert template.failed_calls(history) == {("query", '{"limit": 0, "manager": "Nope"}')}
    assert template.failed_calls([*history, Message.user("And now?")]) == set()


def test_a_call_key_is_the_same_for_the_same_call_sent() -> None:
    assert template.call_key("q", {"b": 1, "a": 2}) == template.call_key("q", {"a": 2, "b": 1})
    # Keys JSON cannot sort still make a key (the call's repr), not an error.
    assert template.call_key("q", {"a": {1: 2, "b": 3}}) == ("q", "{'a': {1: 2, 'b': 3}}")
