"""Renderings of the values orbitals and the connector API hand out: verdicts and decisions.

Each has `*_html` (scoped HTML with an action badge and a field table), `*_markdown` and
`*_text`; only the fields a value carries are shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chatomon.notebook.markup import badge, escape, md_escape, preformatted, table, value_text, view
from chatomon.schemas import InputDecision, OutputDecision, Verdict

__all__ = [
    "input_decision_html",
    "input_decision_markdown",
    "input_decision_text",
    "output_decision_html",
    "output_decision_markdown",
    "output_decision_text",
    "verdict_html",
    "verdict_markdown",
    "verdict_text",
]


def _fields_html(fields: Sequence[tuple[str, Any]]) -> str:
    rows = [[f"<b>{escape(name)}</b>", preformatted(value_text(value))] for name, value in fields]
    return table(("field", "value"), rows) if rows else ""


def _fields_markdown(title: str, fields: Sequence[tuple[str, Any]]) -> str:
    lines = [title]
    lines += [f"- {md_escape(name)}: {md_escape(value_text(value))}" for name, value in fields]
    return "\n".join(lines)


def _verdict_fields(verdict: Verdict) -> list[tuple[str, Any]]:
    fields: list[tuple[str, Any]] = [
        (name, getattr(verdict, name))
        for name in ("reply", "guidance", "reason", "annotations")
        if getattr(verdict, name) is not None
    ]
    if verdict.escalate:
        fields.append(("escalate", True))
    return fields


def verdict_html(verdict: Verdict) -> str:
    """A Verdict as scoped HTML."""
    heading = f"<div><b>Verdict</b> {badge(verdict.action)}</div>"
    return view(heading + _fields_html(_verdict_fields(verdict)))


def verdict_markdown(verdict: Verdict) -> str:
    """A Verdict as Markdown."""
    return _fields_markdown(f"**Verdict: {verdict.action}**", _verdict_fields(verdict))


def verdict_text(verdict: Verdict) -> str:
    """A Verdict as one line."""
    extra = ", ".join(f"{name}={value_text(value)!r}" for name, value in _verdict_fields(verdict))
    return f"Verdict {verdict.action}" + (f" ({extra})" if extra else "")


def _input_fields(decision: InputDecision) -> list[tuple[str, Any]]:
    fields: list[tuple[str, Any]] = [("guidance", text) for text in decision.guidance]
    if decision.reply is not None:
        fields.append(("reply", decision.reply))
    if decision.redact_user_message:
        fields.append(("redact_user_message", True))
    return fields


def input_decision_html(decision: InputDecision) -> str:
    """An InputDecision as scoped HTML."""
    heading = f"<div><b>Input decision</b> {badge(decision.kind)}</div>"
    return view(heading + _fields_html(_input_fields(decision)))


def input_decision_markdown(decision: InputDecision) -> str:
    """An InputDecision as Markdown."""
    return _fields_markdown(f"**Input decision: {decision.kind}**", _input_fields(decision))


def input_decision_text(decision: InputDecision) -> str:
    """An InputDecision as one line."""
    extra = ", ".join(f"{name}={value_text(value)!r}" for name, value in _input_fields(decision))
    return f"InputDecision {decision.kind}" + (f" ({extra})" if extra else "")


def _output_fields(decision: OutputDecision) -> list[tuple[str, Any]]:
    fields: list[tuple[str, Any]] = [("guidance", text) for text in decision.guidance]
    if decision.text is not None:
        fields.append(("text", decision.text))
    return fields


def output_decision_html(decision: OutputDecision) -> str:
    """An OutputDecision as scoped HTML."""
    heading = f"<div><b>Output decision</b> {badge(decision.kind)}</div>"
    return view(heading + _fields_html(_output_fields(decision)))


def output_decision_markdown(decision: OutputDecision) -> str:
    """An OutputDecision as Markdown."""
    return _fields_markdown(f"**Output decision: {decision.kind}**", _output_fields(decision))


def output_decision_text(decision: OutputDecision) -> str:
    """An OutputDecision as one line."""
    extra = ", ".join(f"{name}={value_text(value)!r}" for name, value in _output_fields(decision))
    return f"OutputDecision {decision.kind}" + (f" ({extra})" if extra else "")
