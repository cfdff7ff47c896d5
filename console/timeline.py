"""The turn waterfall: where a turn's time went, as bars for an inline SVG.

The input chain runs first. A report with `steps` (the nucleus' provider rounds and tool
calls, each with its start on the turn's active timeline) shows them where they ran, and
the output chains after the last step (a step carries no attempt number, so the chains of a
regenerated reply follow the final step too). An older report without steps
records only durations: there the nucleus' share of an attempt is what the total leaves
after the orbitals, split evenly over the attempts, and those bars are marked as derived.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Bar", "Waterfall", "waterfall"]

ROW_HEIGHT = 22
LABEL_WIDTH = 220
CHART_WIDTH = 520


@dataclass(frozen=True)
class Bar:
    """One row of the waterfall."""

    label: str
    kind: str  # "input", "nucleus", "output": the CSS class and the legend word
    start_ms: float
    duration_ms: float
    derived: bool
    x: float
    width: float
    y: float

    @property
    def end_x(self) -> float:
        """Where the bar ends, for the duration label after it."""
        return self.x + self.width


@dataclass(frozen=True)
class Waterfall:
    """The bars and the SVG's size."""

    bars: tuple[Bar, ...]
    total_ms: float
    width: int
    height: int
    label_width: int = LABEL_WIDTH

    @property
    def derived(self) -> bool:
        """Whether any bar is an estimate rather than a recorded time."""
        return any(bar.derived for bar in self.bars)


@dataclass(frozen=True)
class _Span:
    label: str
    kind: str
    duration_ms: float
    derived: bool = False
    start_ms: float | None = None  # None: right after the previous span


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _orbital_spans(results: Sequence[Mapping[str, Any]], side: str) -> list[_Span]:
    return [
        _Span(f"{side} · {r.get('name', '?')} ({r.get('action', '?')})", side,
              _number(r.get("duration_ms")))
        for r in results
    ]  # fmt: skip


def _step_spans(report: Mapping[str, Any]) -> list[_Span]:
    """Input orbitals, the recorded steps where they ran, then the output orbitals."""
    spans = _orbital_spans(report.get("input") or (), "input")
    for step in report.get("steps") or ():
        kind = "tool" if step.get("kind") == "tool_call" else "nucleus"
        status = f" ({step['status']})" if step.get("status") else ""
        label = f"{'tool' if kind == 'tool' else 'model'} · {step.get('name', '?')}{status}"
        spans.append(
            _Span(label, kind, _number(step.get("duration_ms")),
                  start_ms=_number(step.get("started_ms")))
        )  # fmt: skip
    for number, attempt in enumerate(report.get("output") or (), start=1):
        for span in _orbital_spans(attempt.get("results") or (), "output"):
            spans.append(_Span(f"{span.label} #{number}", "output", span.duration_ms))
    return spans


def _spans(report: Mapping[str, Any]) -> list[_Span]:
    if report.get("steps"):
        return _step_spans(report)
    inputs = _orbital_spans(report.get("input") or (), "input")
    attempts = list(report.get("output") or ())
    outputs = [_orbital_spans(a.get("results") or (), "output") for a in attempts]
    checked = sum(s.duration_ms for s in inputs) + sum(s.duration_ms for o in outputs for s in o)
    left = max(_number(report.get("duration_ms")) - checked, 0.0)
    spans = list(inputs)
    for number, attempt_spans in enumerate(outputs, start=1):
        share = left / len(outputs)
        spans.append(_Span(f"nucleus · attempt {number}", "nucleus", share, derived=True))
        spans.extend(attempt_spans)
    if not outputs and left:
        spans.append(_Span("nucleus / rest of turn", "nucleus", left, derived=True))
    return spans


def waterfall(report: Mapping[str, Any]) -> Waterfall:
    """The waterfall of a report (a TurnReport as JSON); empty bars for an empty report."""
    spans = _spans(report)
    ends = [(s.start_ms or 0.0) + s.duration_ms for s in spans]
    sequential = sum(s.duration_ms for s in spans if s.start_ms is None)
    total = max(_number(report.get("duration_ms")), sequential, *ends, 1e-9)
    scale = CHART_WIDTH / total
    bars, start = [], 0.0
    for row, span in enumerate(spans):
        start = start if span.start_ms is None else span.start_ms
        bars.append(
            Bar(span.label, span.kind, start, span.duration_ms, span.derived,
                x=LABEL_WIDTH + start * scale, width=max(span.duration_ms * scale, 1.0),
                y=row * ROW_HEIGHT)
        )  # fmt: skip
        start = max(bar.start_ms + bar.duration_ms for bar in bars)  # the next one follows all
    return Waterfall(tuple(bars), total, LABEL_WIDTH + CHART_WIDTH + 80, len(bars) * ROW_HEIGHT)
