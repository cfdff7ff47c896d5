"""A planned turn's plan as the turn page draws it: a tree of tasks with their calls and evidence.

A planned turn's report carries `planned` (`chatomon.schemas.PlannedTurnReport`): every task
of the plan, flat, each naming the roots it depends on (``depends_on``) or the root that
added it as a dynamic child (``parent_id``). The page draws the roots in plan order, under
each root the tasks that depend on it and the children it added; a dependent of several
roots sits under the first and names the others (a plan is at most one level deep, so a
dependent is never depended upon). A task names its tool calls by id: those whose card
the page shows (`conversation_items`) link to it by the card's element id (`tool_anchor`).

The report given is the one the page shows, already redacted; a stored `planned` that no
longer validates (an older or imported row) draws no tree: the raw report still holds it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from chatomon.schemas import PlannedEvidence, PlannedTaskReport, PlannedTurnReport

from .conversation_items import ConversationItem

__all__ = [
    "PlanEvidenceRow",
    "PlanNode",
    "PlanToolCall",
    "PlanTree",
    "plan_tree",
    "planned_report",
    "task_anchor",
    "tool_anchor",
]

# What an HTML id and a URL fragment take as is: planned call ids read "t1.call-1".
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
Relation = Literal["root", "dependent", "child"]


def _anchor(prefix: str, value: str) -> str:
    # An id of a provider is usually safe to show as is ("call_1"); any other is hashed
    # behind a double hyphen, which a safe id (starting alphanumeric) can never produce.
    if _SAFE_ID.fullmatch(value):
        return f"{prefix}-{value}"
    return f"{prefix}--{hashlib.sha256(value.encode()).hexdigest()[:16]}"


def tool_anchor(call_id: str) -> str:
    """The element id of a tool call's card on the turn page (a valid, unique HTML id)."""
    return _anchor("cc-tool", call_id)


def task_anchor(task_id: str) -> str:
    """The element id of a task of the plan tree."""
    return _anchor("cc-plan-task", task_id)


@dataclass(frozen=True)
class PlanToolCall:
    """One tool call of a task: its name when known, and its card's id when the page shows it."""

    call_id: str
    name: str | None
    anchor: str | None


@dataclass(frozen=True)
class PlanEvidenceRow:
    """One evidence record of a task, and the card of the call that produced it."""

    evidence: PlannedEvidence
    anchor: str | None


@dataclass(frozen=True)
class PlanNode:
    """One task of the tree, with the tasks drawn under it."""

    task: PlannedTaskReport
    relation: Relation
    anchor: str
    reason: str | None  # why it is unresolved (the task's, else the coverage's), None when resolved
    tool_calls: tuple[PlanToolCall, ...]
    evidence: tuple[PlanEvidenceRow, ...]
    children: tuple[PlanNode, ...]


@dataclass(frozen=True)
class PlanTree:
    """A planned turn's header figures and its tasks as a tree."""

    report: PlannedTurnReport
    roots: tuple[PlanNode, ...]

    @property
    def task_count(self) -> int:
        """Every task of the plan, dynamic children included."""
        return len(self.report.tasks)

    @property
    def budget_percent(self) -> int | None:
        """The share of the global round budget used, None when the limit is unknown."""
        if self.report.rounds_limit <= 0:
            return None
        return min(100, round(100 * self.report.rounds_used / self.report.rounds_limit))


def _shown_cards(items: Iterable[ConversationItem]) -> dict[str, str]:
    """Call id → tool name of every tool card the page shows."""
    return {card.call_id: card.name for item in items for card in item.tools if card.call_id}


class _Builder:
    """Builds the nodes of one plan, knowing which cards the page shows."""

    def __init__(self, report: PlannedTurnReport, cards: Mapping[str, str]) -> None:
        self.cards = cards
        self.drawn: set[str] = set()
        self.names = {e.call_id: e.tool for t in report.tasks for e in t.evidence if e.call_id}
        coverage = report.coverage
        self.unresolved = {u.task_id: u.reason for u in coverage.unresolved} if coverage else {}
        ids = {task.id for task in report.tasks}
        # Where each task is drawn: under its parent, else under its first known dependency.
        self.under: dict[str, list[PlannedTaskReport]] = {}
        self.top: list[PlannedTaskReport] = []
        for task in report.tasks:
            above = task.parent_id if task.parent_id in ids else None
            if above is None:
                above = next(
                    (dep for dep in task.depends_on if dep in ids and dep != task.id), None
                )
            if above is None:
                self.top.append(task)
            else:
                self.under.setdefault(above, []).append(task)

    def call(self, call_id: str) -> PlanToolCall:
        shown = call_id in self.cards
        name = self.cards.get(call_id) or self.names.get(call_id)
        return PlanToolCall(call_id, name, tool_anchor(call_id) if shown else None)

    def node(self, task: PlannedTaskReport, seen: frozenset[str]) -> PlanNode:
        seen = seen | {task.id}  # a malformed stored plan may loop: draw each task once per path
        self.drawn.add(task.id)
        reason = None if task.status == "resolved" else task.reason or self.unresolved.get(task.id)
        relation: Relation = (
            "child" if task.parent_id else "dependent" if task.depends_on else "root"
        )
        evidence = tuple(
            PlanEvidenceRow(
                e, tool_anchor(e.call_id) if e.call_id and e.call_id in self.cards else None
            )
            for e in task.evidence
        )
        below = [t for t in self.under.get(task.id, ()) if t.id not in seen]
        return PlanNode(
            task=task,
            relation=relation,
            anchor=task_anchor(task.id),
            reason=reason,
            tool_calls=tuple(self.call(call_id) for call_id in task.tool_call_ids),
            evidence=evidence,
            children=tuple(self.node(child, seen) for child in below),
        )


def planned_report(report: Mapping[str, Any]) -> PlannedTurnReport | None:
    """The report's `planned` section, None for a tool-loop turn or one that does not validate."""
    planned = report.get("planned")
    if not isinstance(planned, Mapping):
        return None
    try:
        return PlannedTurnReport.model_validate(planned)
    except ValidationError:
        return None


def plan_tree(report: Mapping[str, Any], items: Iterable[ConversationItem] = ()) -> PlanTree | None:
    """The plan of a planned turn's (redacted) report as a tree; None for any other turn.

    Args:
        report: The turn's report as the page shows it.
        items: The conversation items the page shows: tool calls with a card there link to it.
    """
    planned = planned_report(report)
    if planned is None:
        return None
    builder = _Builder(planned, _shown_cards(items))
    roots = [builder.node(task, frozenset()) for task in builder.top]
    # Tasks a malformed stored plan hangs only on each other (a loop) are drawn at the top.
    # (A generator: each check sees the tasks the nodes before it drew.)
    roots.extend(
        builder.node(task, frozenset()) for task in planned.tasks if task.id not in builder.drawn
    )
    return PlanTree(report=planned, roots=tuple(roots))
