"""The texts a planned turn sends its roles: planner, executors and synthesizer.

They are deliberately short: a whole planned read of the toy registry (planner,
executor rounds, synthesizer) sends at most 15,000 prompt characters. Schema and
evidence travel as compact JSON, and executors see only the slice of the schema their
task needs, never the whole index. None of these texts reaches a client.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from chatomon.planned.models import CALCULATION_OPERATIONS
from chatomon.providers.base import Message
from chatomon.schemas import Message as HistoryMessage

if TYPE_CHECKING:
    from chatomon.planned.models import EvidenceRequirement, PlannedTask
    from chatomon.schemas import PlannedCoverage

__all__ = [
    "HISTORY_MESSAGES",
    "HISTORY_MESSAGE_CHARS",
    "MAX_REPLAYED_PLAN_CHARS",
    "correction_message",
    "executor_messages",
    "planner_messages",
    "replayed_plan",
    "synthesis_messages",
]

HISTORY_MESSAGES = 4
"""Earlier user and assistant texts the planner sees (the latest ones)."""
HISTORY_MESSAGE_CHARS = 300
"""Each earlier text is cut to this many characters: enough to resolve "it" or "those"."""

MAX_REPLAYED_PLAN_CHARS = 4_000
"""A refused plan is shown back to the planner cut to this length (a full plan is shorter)."""

PLANNER = (
    "Plan how to answer the user's last message from the application's data. "
    "Reply with JSON only, shaped like:\n"
    '{"intent":"read","tasks":[{"id":"t1","question":"Which parts use steel?",'
    '"manager":"PartManager","depends_on":[],"needs":[{"kind":"query",'
    '"description":"parts made of steel"},{"kind":"calculation","operation":"count"}]}]}\n'
    "Rules: 1-6 tasks, each one self-contained question; ids are short words. "
    "needs: 1-4 items, kind schema, path, query or calculation; a calculation names its "
    "operation: {operations}. depends_on lists tasks whose results this task needs; "
    "those tasks depend on nothing. manager is your best guess of the data set. "
    'To create, change or delete data reply {"intent":"mutation"}.'
)

EXECUTOR = (
    "You gather the data for one task with the tools, one tool call per reply. "
    "Use only the data sets below. When the results cover every need, reply with one "
    "short sentence saying so; never invent data."
)

SYNTHESIZER = (
    "Answer the user's question from the evidence below only, in plain words. "
    "Never invent data; if the evidence does not cover something, say so. "
    "Do not mention tasks, tools or evidence ids."
)


def planner_messages(
    user_text: str,
    history: Sequence[Message | HistoryMessage],
    catalog_lines: Sequence[str],
    manager_lines: Sequence[str],
) -> list[Message]:
    """The planner's request: instructions and data sets, recent history, the question.

    Args:
        user_text: The user's message to plan for.
        history: The conversation before it (provider messages, or the pipeline's
            `chatomon.schemas.Message` history); only the latest user and assistant texts
            are kept (tool exchanges never: they are long and the planner plans anew).
        catalog_lines: The manager catalog's summary lines (may be empty).
        manager_lines: One compact line per chat-exposed manager (may be empty).
    """
    parts = [PLANNER.replace("{operations}", ", ".join(CALCULATION_OPERATIONS))]
    if manager_lines:
        parts.append("Data sets:\n" + "\n".join(manager_lines))
    if catalog_lines:
        parts.append("Catalog:\n" + "\n".join(catalog_lines))
    return [Message.system("\n\n".join(parts)), *_recent(history), Message.user(user_text)]


def _recent(history: Sequence[Message | HistoryMessage]) -> list[Message]:
    kept = [m for m in history if m.role in {"user", "assistant"} and m.content.strip()]
    return [
        Message(role=m.role, content=_cut(m.content, HISTORY_MESSAGE_CHARS))
        for m in kept[-HISTORY_MESSAGES:]
    ]


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def replayed_plan(text: str) -> Message:
    """The refused reply as the assistant's turn of the correction round (cut when long)."""
    return Message.assistant(_cut(text, MAX_REPLAYED_PLAN_CHARS))


def correction_message(detail: str) -> Message:
    """The one correction round's request, naming what the plan got wrong.

    The detail is the validator's private message ("tasks[1].depends_on: unknown task
    't9'"): it goes to the planner model, never to a client.

    Examples:
        >>> correction_message("tasks: expected 1-6 items").content
        'That plan is invalid (tasks: expected 1-6 items). Reply with the corrected JSON only.'
    """
    return Message.user(f"That plan is invalid ({detail}). Reply with the corrected JSON only.")


def executor_messages(
    task: PlannedTask,
    schema_slice: Sequence[Mapping[str, Any]],
    dependency_evidence: Sequence[Mapping[str, Any]],
) -> list[Message]:
    """An executor's first request for `task`: its data sets, earlier results, its needs.

    Args:
        task: The task to gather evidence for.
        schema_slice: The compact schemas of the task's candidate managers.
        dependency_evidence: The evidence of the tasks it depends on, as JSON mappings.
    """
    system = EXECUTOR + "\nData sets:\n" + _lines(schema_slice)
    if dependency_evidence:
        system += "\nResults of earlier tasks:\n" + _lines(dependency_evidence)
    needs = "; ".join(_need(requirement) for requirement in task.requirements)
    return [Message.system(system), Message.user(f"Task: {task.question}\nNeeds: {needs}")]


def _need(requirement: EvidenceRequirement) -> str:
    label: str = requirement.kind
    if requirement.operation:
        label += f" ({requirement.operation})"
    return f"{label}: {requirement.description}" if requirement.description else label


def synthesis_messages(
    user_text: str,
    evidence: Sequence[Mapping[str, Any]],
    coverage: PlannedCoverage,
) -> list[Message]:
    """The synthesizer's request: the eligible evidence, the coverage, the question.

    A partial coverage is stated, so that the answer says what it could not cover.
    """
    system = SYNTHESIZER + "\nEvidence:\n" + (_lines(evidence) or "(none)")
    if coverage.status != "complete":
        missing = coverage.total - coverage.resolved
        system += (
            f"\n{missing} of {coverage.total} parts of the question could not be answered: "
            "say that the answer is partial."
        )
    return [Message.system(system), Message.user(user_text)]


def _lines(values: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(
        json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
        for value in values
    )
