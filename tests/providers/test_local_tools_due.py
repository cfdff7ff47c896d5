"""LocalProvider offers no tools once a mutation's outcome is in: the model answers."""

from __future__ import annotations

from typing import Any

import pytest

from chatomon.providers import local_template as template
from chatomon.providers.base import Message, ToolCall

MUTATE = ToolCall("call_1_0", "mutate", {"mutation": "assignPartToProject", "input": {}})
QUERY = ToolCall("call_3_0", "query", {"manager": "PartManager"})


def after(*rounds: tuple[ToolCall, Any]) -> list[Message]:
    history = [Message.user("Assign part P-1002 to project PRJ-101")]
    for call, result in rounds:
        history += [Message.assistant("", [call]), Message.tool(call, result)]
    return history


@pytest.mark.parametrize("status", ["executed", "unchanged", "rejected", "timed_out"])
def test_a_decided_write_leaves_only_the_answer(status: str) -> None:
    assert template.tools_due(after((MUTATE, {"status": status})), 3) is False


@pytest.mark.parametrize(
    "history",
    [
        after(),
        # a failed write: the model may correct its call
        after((MUTATE, {"status": "error", "code": "invalid_input"})),
        # a read after the write: the latest round decides
        after((MUTATE, {"status": "executed"}), (QUERY, {"data": []})),
        after((QUERY, {"data": []})),
        after((MUTATE, "not JSON")),
        # a new user message starts over
        [*after((MUTATE, {"status": "unchanged"})), Message.user("And PRJ-102?")],
    ],
)
def test_tools_stay_offered_otherwise(history: list[Message]) -> None:
    assert template.tools_due(history, 3) is True


def test_the_round_cap_still_holds() -> None:
    history = after((QUERY, {"data": []}), (QUERY, {"data": []}))
    assert template.tools_due(history, 2) is False
    assert template.tools_due(history, 3) is True


def test_a_result_stored_as_text_is_read_too() -> None:
    stored = Message(
        role="tool", content='{"status": "unchanged"}', tool_call_id="c", tool_name="mutate"
    )
    assert template.tools_due([Message.user("x"), stored], 3) is False
