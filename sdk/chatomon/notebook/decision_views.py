"""Renderings of the values orbitals and the connector API hand out: verdicts and decisions.

Each is shown as scoped HTML (an action badge and a field table), Markdown or one line of
text; only the fields a value carries are shown. `VERDICT`, `INPUT_DECISION` and
`OUTPUT_DECISION` are the three views; they differ only in their titles and fields.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from chatomon.notebook.markup import badge, escape, md_escape, preformatted, table, value_text, view
from chatomon.schemas import InputDecision, OutputDecision, Verdict

__all__ = ["INPUT_DECISION", "OUTPUT_DECISION", "VERDICT", "FieldsView"]

Fields = Sequence[tuple[str, Any]]


@dataclass(frozen=True, slots=True)
class FieldsView:
    """The renderings of a value shown as a titled action plus (name, value) fields.

    Attributes:
        title: The heading, e.g. "Input decision".
        text_name: The word starting the one-line text, e.g. "InputDecision".
        action: The value's action or kind, shown as a badge.
        fields: The fields the value carries, in display order.
    """

    title: str
    text_name: str
    action: Callable[[Any], str]
    fields: Callable[[Any], Fields]

    def html(self, value: Any) -> str:
        """`value` as scoped HTML."""
        heading = f"<div><b>{self.title}</b> {badge(self.action(value))}</div>"
        rows = [
            [f"<b>{escape(name)}</b>", preformatted(value_text(field))]
            for name, field in self.fields(value)
        ]
        return view(heading + (table(("field", "value"), rows) if rows else ""))

    def markdown(self, value: Any) -> str:
        """`value` as Markdown."""
        lines = [f"**{self.title}: {self.action(value)}**"]
        lines += [
            f"- {md_escape(name)}: {md_escape(value_text(field))}"
            for name, field in self.fields(value)
        ]
        return "\n".join(lines)

    def text(self, value: Any) -> str:
        """`value` as one line."""
        extra = ", ".join(f"{name}={value_text(field)!r}" for name, field in self.fields(value))
        return f"{self.text_name} {self.action(value)}" + (f" ({extra})" if extra else "")


def _verdict_fields(verdict: Verdict) -> Fields:
    fields: list[tuple[str, Any]] = [
        (name, getattr(verdict, name))
        for name in ("reply", "guidance", "reason", "annotations")
        if getattr(verdict, name) is not None
    ]
    if verdict.escalate:
        fields.append(("escalate", True))
    return fields


def _input_fields(decision: InputDecision) -> Fields:
    fields: list[tuple[str, Any]] = [("guidance", text) for text in decision.guidance]
    if decision.reply is not None:
        fields.append(("reply", decision.reply))
    if decision.redact_user_message:
        fields.append(("redact_user_message", True))
    return fields


def _output_fields(decision: OutputDecision) -> Fields:
    fields: list[tuple[str, Any]] = [("guidance", text) for text in decision.guidance]
    if decision.text is not None:
        fields.append(("text", decision.text))
    return fields


VERDICT = FieldsView("Verdict", "Verdict", lambda verdict: verdict.action, _verdict_fields)
"""How a Verdict is shown."""

INPUT_DECISION = FieldsView(
    "Input decision", "InputDecision", lambda decision: decision.kind, _input_fields
)
"""How an InputDecision is shown."""

OUTPUT_DECISION = FieldsView(
    "Output decision", "OutputDecision", lambda decision: decision.kind, _output_fields
)
"""How an OutputDecision is shown."""
