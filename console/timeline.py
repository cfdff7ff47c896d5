"""The turn waterfall: where a turn's time went, as bars for an inline SVG.

The input chain runs first. A report with `steps` (the nucleus' provider rounds and tool
calls, each with its start on the turn's active timeline) shows them where they ran, and
the output chains after the last step (a step carries no attempt number, so the chains of a
regenerated reply follow the final step too). An older report without steps
records only durations: there the nucleus' share of an attempt is what the total leaves
after the orbitals, split evenly over the attempts, and those bars are marked as derived.
A turn that never reached its nucleus (stopped by the input chain: no output attempt, not
aborted) gets no nucleus bar at all.

Offsets count active time; a wait for a decision (the report's `pauses`) is drawn as a gap
of fixed width after the step that asked for it (the n-th tool call with status
``waiting``), labelled with its real length, and everything after it moves right by that gap: an
hour's wait would otherwise squeeze the whole turn into a pixel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Bar", "Waterfall", "waterfall"]

ROW_HEIGHT = 22
LABEL_WIDTH = 220
CHART_WIDTH = 520
GAP_WIDTH = 48
ASKED = "waiting"  # the status of the tool step that asked for a decision


@dataclass(frozen=True)
class Bar:
    """One row of the waterfall."""

    label: str
    kind: str  # "input", "nucleus", "tool", "output", "wait": the CSS class and the legend word
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
    gap: bool = False  # a wait: drawn GAP_WIDTH wide, whatever its length


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _orbital_spans(results: Sequence[Mapping[str, Any]], side: str) -> list[_Span]:
    return [
        _Span(f"{side} · {r.get('name', '?')} ({r.get('action', '?')})", side,
              _number(r.get("duration_ms")))
        for r in results
    ]  # fmt: skip


def _wait_span(pause: Mapping[str, Any], at_ms: float) -> _Span:
    outcome = pause.get("outcome", "?")
    label = f"wait · {pause.get('mutation', '?')} ({outcome})"
    return _Span(label, "wait", _number(pause.get("waited_seconds")) * 1000, start_ms=at_ms,
                 gap=True)  # fmt: skip


def _step_spans(report: Mapping[str, Any]) -> list[_Span]:
    """Input orbitals, the recorded steps where they ran, then the output orbitals.

    Each wait follows the step that asked for it.
    """
    spans = _orbital_spans(report.get("input") or (), "input")
    pauses = list(report.get("pauses") or ())
    for step in report.get("steps") or ():
        kind = "tool" if step.get("kind") == "tool_call" else "nucleus"
        status = f" ({step['status']})" if step.get("status") else ""
        label = f"{'tool' if kind == 'tool' else 'model'} · {step.get('name', '?')}{status}"
        start, duration = _number(step.get("started_ms")), _number(step.get("duration_ms"))
        spans.append(_Span(label, kind, duration, start_ms=start))
        if step.get("status") == ASKED and pauses:
            spans.append(_wait_span(pauses.pop(0), start + duration))
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
    if not outputs and left and report.get("final_action") == "aborted":
        # Aborted before any reply: the nucleus may have run and failed. Otherwise the input
        # chain decided the turn and no model ran: no nucleus bar.
        spans.append(_Span("nucleus / rest of turn", "nucleus", left, derived=True))
    return spans


def waterfall(report: Mapping[str, Any]) -> Waterfall:
    """The waterfall of a report (a TurnReport as JSON); empty bars for an empty report."""
    spans = _spans(report)
    timed = [s for s in spans if not s.gap]  # a wait's length is not on the active timeline
    ends = [(s.start_ms or 0.0) + s.duration_ms for s in timed]
    sequential = sum(s.duration_ms for s in timed if s.start_ms is None)
    total = max(_number(report.get("duration_ms")), sequential, *ends, 1e-9)
    scale = CHART_WIDTH / total
    bars: list[Bar] = []
    start = 0.0
    gaps: list[float] = []  # the active-time points where a wait was drawn
    for row, span in enumerate(spans):
        start = start if span.start_ms is None else span.start_ms
        shift = GAP_WIDTH * len([at for at in gaps if start >= at])
        width = GAP_WIDTH if span.gap else max(span.duration_ms * scale, 1.0)
        bars.append(
            Bar(span.label, span.kind, start, span.duration_ms, span.derived,
                x=LABEL_WIDTH + start * scale + shift, width=width, y=row * ROW_HEIGHT)
        )  # fmt: skip
        if span.gap:
            gaps.append(start)
            continue  # the wait takes no active time: the next step starts where it began
        start = max(b.start_ms + b.duration_ms for b in bars if b.kind != "wait")
    width = LABEL_WIDTH + CHART_WIDTH + GAP_WIDTH * len(gaps) + 110
    return Waterfall(tuple(bars), total, width, len(bars) * ROW_HEIGHT)
