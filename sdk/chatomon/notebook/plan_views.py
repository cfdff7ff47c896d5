"""Renderings of a planned turn's report (`PlannedTurnReport`, a TurnReport's `planned`).

Each has three forms, as the other report views: `planned_report_html` (scoped HTML: the
coverage, round budget and roles, then the tasks as an indented tree in a table),
`planned_report_markdown` and `planned_report_text`. The tree reads as the console's turn
page draws it: the roots in plan order, under each root the tasks that depend on it (a
dependent of several roots under the first, naming all) and the dynamic children it
added. `planned_body_html` is the inside, which a TurnReport's rendering embeds.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from chatomon.notebook.markup import (
    Tone,
    badge,
    duration_bar,
    escape,
    format_ms,
    md_escape,
    md_table,
    plural,
    table,
    view,
)
from chatomon.schemas import PlannedTaskReport, PlannedTurnReport

__all__ = [
    "PlanRow",
    "plan_rows",
    "planned_body_html",
    "planned_report_html",
    "planned_report_markdown",
    "planned_report_text",
    "planned_text_lines",
]

TASK_HEADERS = ("task", "status", "role", "question", "tool calls", "evidence", "time")
# The tones of the planned words the shared badge palette does not know.
_TONES: dict[str, Tone] = {
    "resolved": "ok",
    "complete": "ok",
    "partial": "notice",
    "running": "neutral",
    "budget_exhausted": "bad",
    "none": "bad",
}
_INDENT_PX = 16


@dataclass(frozen=True, slots=True)
class PlanRow:
    """One task in drawing order, with its depth in the tree (0 for a top task)."""

    task: PlannedTaskReport
    depth: int
    reason: str | None
    """Why it is unresolved (its own reason, else the coverage's); None once resolved."""

    @property
    def note(self) -> str | None:
        """The reason where it adds to the status ("budget_exhausted" says it twice)."""
        return self.reason if self.reason != self.task.status else None


def _planned_badge(label: str) -> str:
    return badge(label, tone=_TONES.get(label))


def plan_rows(report: PlannedTurnReport) -> tuple[PlanRow, ...]:
    """The tasks of `report` in tree order: each root, then the tasks drawn under it."""
    ids = {task.id for task in report.tasks}
    unresolved = (
        {u.task_id: u.reason for u in report.coverage.unresolved} if report.coverage else {}
    )
    under: dict[str, list[PlannedTaskReport]] = {}
    top: list[PlannedTaskReport] = []
    for task in report.tasks:
        above = task.parent_id if task.parent_id in ids else None
        if above is None:
            above = next((d for d in task.depends_on if d in ids and d != task.id), None)
        (top if above is None else under.setdefault(above, [])).append(task)
    drawn: set[str] = set()

    def walk(task: PlannedTaskReport, depth: int, seen: frozenset[str]) -> Iterator[PlanRow]:
        drawn.add(task.id)
        reason = None if task.status == "resolved" else task.reason or unresolved.get(task.id)
        yield PlanRow(task, depth, reason)
        for below in under.get(task.id, ()):
            if below.id not in seen:  # a malformed plan may loop: once per path
                yield from walk(below, depth + 1, seen | {below.id})

    rows = [row for task in top for row in walk(task, 0, frozenset({task.id}))]
    # Tasks that hang only on each other (a loop) are drawn at the top, once.
    for task in report.tasks:
        if task.id not in drawn:
            rows += walk(task, 0, frozenset({task.id}))
    return tuple(rows)


def _relation(task: PlannedTaskReport) -> str:
    if task.parent_id:
        return f"child of {task.parent_id}"
    if task.depends_on:
        return "needs " + ", ".join(task.depends_on)
    return ""


def _task_cell(row: PlanRow) -> str:
    relation = _relation(row.task)
    note = f' <span class="cm-muted">{escape(relation)}</span>' if relation else ""
    pad = row.depth * _INDENT_PX
    marker = "└ " if row.depth else ""
    name = f"{escape(marker)}<b>{escape(row.task.id)}</b>"
    return f'<div style="padding-left:{pad}px">{name}{note}</div>'


def _evidence_cell(task: PlannedTaskReport) -> str:
    items = []
    for e in task.evidence:
        source = f" from {e.tool}" if e.tool else ""
        summary = f": {e.summary}" if e.summary else ""
        reused = " " + badge("reused", tone="neutral") if e.reused else ""
        items.append(f"<div>{escape(f'{e.id} {e.kind}{source}{summary}')}{reused}</div>")
    return "".join(items)


def _task_row(row: PlanRow, longest: float) -> list[str]:
    task = row.task
    status = _planned_badge(task.status)
    if row.note:
        status += f'<div class="cm-muted">{escape(row.note)}</div>'
    role = escape(task.role or "—")
    if task.manager:
        role += f'<div class="cm-muted">{escape(task.manager)}</div>'
    question = (
        escape(task.question) if task.question is not None else '<span class="cm-muted">—</span>'
    )
    calls = escape(", ".join(task.tool_call_ids))
    timing = duration_bar(task.duration_ms, longest)
    timing += f'<div class="cm-muted">{escape(plural(task.rounds, "round"))}</div>'
    return [_task_cell(row), status, role, question, calls, _evidence_cell(task), timing]


def _facts(report: PlannedTurnReport) -> list[str]:
    facts = [f"{report.rounds_used} of {report.rounds_limit} rounds"]
    facts.append(plural(report.planner_attempts, "planner attempt"))
    facts.append(f"{report.prompt_chars} prompt characters")
    if report.roles_used:
        facts.append("roles " + ", ".join(report.roles_used))
    return facts


def planned_body_html(report: PlannedTurnReport) -> str:
    """The inside of a planned report's rendering, for embedding in a TurnReport's."""
    head = f"<b>Planned turn</b> {badge(report.intent, tone='neutral')}"
    if report.coverage:
        cov = report.coverage
        head += (
            f" {_planned_badge(cov.status)} {escape(cov.resolved)} of {escape(cov.total)} resolved"
        )
    if report.terminal_reason:
        head += " " + badge(report.terminal_reason, tone="bad")
    parts = [
        f"<div>{head}</div>",
        f'<div class="cm-muted">{escape(" · ".join(_facts(report)))}</div>',
    ]
    rows = plan_rows(report)
    if rows:
        longest = max(row.task.duration_ms for row in rows)
        parts.append(table(TASK_HEADERS, [_task_row(row, longest) for row in rows]))
    elif report.intent == "mutation":
        parts.append(
            '<div class="cm-muted">a mutation: the turn went on through the tool loop</div>'
        )
    return "".join(parts)


def planned_report_html(report: PlannedTurnReport) -> str:
    """A PlannedTurnReport as scoped HTML."""
    return view(planned_body_html(report))


def _summary(report: PlannedTurnReport) -> str:
    coverage = report.coverage
    covered = (
        f"{coverage.status}, {coverage.resolved}/{coverage.total} tasks resolved"
        if coverage
        else "no coverage"
    )
    ended = f", ended {report.terminal_reason}" if report.terminal_reason else ""
    return (
        f"{report.intent}: {covered}{ended}; {report.rounds_used}/{report.rounds_limit} rounds, "
        f"{plural(report.planner_attempts, 'planner attempt')}, {report.prompt_chars} prompt chars"
    )


def planned_report_markdown(report: PlannedTurnReport) -> str:
    """A PlannedTurnReport as Markdown: a summary line and one table row per task."""
    lines = [f"**Planned turn** {md_escape(_summary(report))}"]
    rows = [
        [
            "↳ " * row.depth + row.task.id,
            row.task.status + (f" ({row.note})" if row.note else ""),
            row.task.role or "",
            row.task.question or "",
            ", ".join(row.task.tool_call_ids),
            ", ".join(e.id for e in row.task.evidence),
            format_ms(row.task.duration_ms),
        ]
        for row in plan_rows(report)
    ]
    if rows:
        lines.append(md_table(TASK_HEADERS, rows))
    return "\n\n".join(lines)


def planned_text_lines(report: PlannedTurnReport, indent: str = "") -> Sequence[str]:
    """A PlannedTurnReport as lines: the summary, then one indented line per task."""
    lines = [f"{indent}PlannedTurnReport {_summary(report)}"]
    for row in plan_rows(report):
        task = row.task
        line = f"{indent}  {'  ' * row.depth}{task.id} {task.status}"
        if row.note:
            line += f" ({row.note})"
        line += f" {task.role or '-'} {plural(task.rounds, 'round')}"
        if task.tool_call_ids:
            line += " calls " + ",".join(task.tool_call_ids)
        if task.evidence:
            line += " evidence " + ",".join(e.id for e in task.evidence)
        lines.append(line)
    return lines


def planned_report_text(report: PlannedTurnReport) -> str:
    """A PlannedTurnReport as text: a summary line, then a line per task, indented as the tree."""
    return "\n".join(planned_text_lines(report))
