import pytest

from chatomon import public_errors
from chatomon.planned.events import (
    PLANNED_PUBLIC_MESSAGES,
    planned_coverage,
    planned_done_event,
    planned_error_event,
    planned_tool_call_event,
    planned_tool_result_event,
)
from chatomon.public_errors import GENERIC_ERROR_MESSAGE, PLANNED_REASONS
from chatomon.redaction import Redaction
from chatomon.schemas import TokenUsage

USAGE = TokenUsage(input_tokens=120, output_tokens=30)


def test_the_public_messages_are_the_pipelines():
    assert PLANNED_PUBLIC_MESSAGES is public_errors.PLANNED_PUBLIC_MESSAGES
    assert PLANNED_PUBLIC_MESSAGES["invalid_plan"] == (
        "I could not prepare a safe plan for that request."
    )


def test_a_complete_answer_is_done_with_complete_coverage():
    event = planned_done_event(USAGE, resolved=2, total=2, unresolved=[])

    assert event == {
        "type": "done",
        "usage": {"input_tokens": 120, "output_tokens": 30},
        "coverage": {"status": "complete", "resolved": 2, "total": 2, "unresolved": []},
    }


def test_a_partial_answer_names_its_unresolved_tasks_and_reasons():
    event = planned_done_event(
        USAGE,
        resolved=1,
        total=3,
        unresolved=[("t2", "dependency_blocked"), ("t3", "budget_exhausted")],
    )

    assert event["coverage"] == {
        "status": "partial",
        "resolved": 1,
        "total": 3,
        "unresolved": [
            {"task_id": "t2", "reason": "dependency_blocked"},
            {"task_id": "t3", "reason": "budget_exhausted"},
        ],
    }


@pytest.mark.parametrize(("resolved", "total"), [(0, 2), (3, 2), (-1, 2)])
def test_counts_that_describe_no_grounded_answer_are_refused(resolved, total):
    with pytest.raises(ValueError, match="a grounded answer resolves"):
        planned_done_event(USAGE, resolved=resolved, total=total, unresolved=[])


def test_an_unresolved_reason_must_be_a_stable_reason():
    with pytest.raises(ValueError, match="not a stable planned reason"):
        planned_done_event(
            USAGE, resolved=1, total=2, unresolved=[("t2", "KeyError: 'PartManager'")]
        )


def test_fewer_resolved_than_planned_is_partial_even_without_a_listed_reason():
    assert planned_coverage(resolved=1, total=2, unresolved=[]).status == "partial"


@pytest.mark.parametrize("reason", PLANNED_REASONS)
def test_each_stable_reason_is_an_error_with_its_public_message(reason):
    assert planned_error_event(reason) == {
        "type": "error",
        "code": reason,
        "message": PLANNED_PUBLIC_MESSAGES[reason],
    }


@pytest.mark.parametrize(
    "reason",
    ["ProviderError: strong_local refused", "trust group local", None, "rate_limited"],
)
def test_any_other_reason_is_the_generic_chat_error_without_its_text(reason):
    event = planned_error_event(reason)

    assert event == {"type": "error", "code": "chat_error", "message": GENERIC_ERROR_MESSAGE}


def test_a_tool_call_event_carries_its_task_id():
    event = planned_tool_call_event("t1", "call-1", "query", {"manager": "PartManager"})

    assert event == {
        "type": "tool_call",
        "id": "call-1",
        "name": "query",
        "args": {"manager": "PartManager"},
        "task_id": "t1",
    }


def test_a_tool_result_event_carries_its_task_id():
    result = {"data": [{"name": "Bolt"}], "total_count": 1, "has_more": False}

    event = planned_tool_result_event("t2", "call-2", "query", result)

    assert event == {
        "type": "tool_result",
        "id": "call-2",
        "name": "query",
        "result": result,
        "task_id": "t2",
    }


def test_tool_events_pass_the_redaction_rule():
    rule = Redaction(keys=("serial",))

    call = planned_tool_call_event("t1", "c1", "query", {"password": "hunter2"})
    result = planned_tool_result_event("t1", "c1", "query", {"serial": "X-1"}, redaction=rule)

    assert call["args"] == {"password": "[redacted]"}
    assert result["result"] == {"serial": "[redacted]"}
