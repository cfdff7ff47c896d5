"""The turn waterfall: where a turn's time went, as bars for an inline SVG.

A TurnReport records each orbital's duration and the turn's total, not start times: the
input chain runs first, then each output attempt (nucleus reply, then its output chain).
The nucleus' share of an attempt is what the total leaves after the orbitals, split
evenly over the attempts, so those bars are marked as derived.
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


@dataclass(frozen=True)
class _Span:
    label: str
    kind: str
    duration_ms: float
    derived: bool = False


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _orbital_spans(results: Sequence[Mapping[str, Any]], side: str) -> list[_Span]:
    return [
        _Span(f"{side} · {r.get('name', '?')} ({r.get('action', '?')})", side,
              _number(r.get("duration_ms")))
        for r in results
    ]  # fmt: skip


def _spans(report: Mapping[str, Any]) -> list[_Span]:
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
    total = max(_number(report.get("duration_ms")), sum(s.duration_ms for s in spans), 1e-9)
    scale = CHART_WIDTH / total
    bars, start = [], 0.0
    for row, span in enumerate(spans):
        bars.append(
            Bar(span.label, span.kind, start, span.duration_ms, span.derived,
                x=LABEL_WIDTH + start * scale, width=max(span.duration_ms * scale, 1.0),
                y=row * ROW_HEIGHT)
        )  # fmt: skip
        start += span.duration_ms
    return Waterfall(tuple(bars), total, LABEL_WIDTH + CHART_WIDTH + 80, len(bars) * ROW_HEIGHT)
