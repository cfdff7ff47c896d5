"""Two turns side by side: their figures and deltas, their steps aligned by name, a report diff.

Each turn's timeline is read as a sequence of named steps (input orbitals, model rounds,
tool calls, output orbitals: the waterfall's rows, waits left out) and the two sequences
are aligned with `difflib.SequenceMatcher` on the names, so a step both turns ran sits on
one row with both durations and their difference, and a step only one ran stands alone.
The raw reports, redacted by the one rule as everywhere in the console, are compared line
by line as indented JSON with sorted keys.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from chatomon.django.audit.rule import current_redaction
from chatomon.django.models import Turn

from .conf import console_settings
from .timeline import waterfall
from .usage_costs import turn_cost

__all__ = ["Comparison", "DiffLine", "StepRow", "compare_turns"]


@dataclass(frozen=True)
class StepRow:
    """One aligned step: its duration in each turn (None where that turn did not run it)."""

    label: str
    a_ms: float | None
    b_ms: float | None

    @property
    def delta_ms(self) -> float | None:
        """B minus A, when both ran the step."""
        return None if self.a_ms is None or self.b_ms is None else self.b_ms - self.a_ms


@dataclass(frozen=True)
class DiffLine:
    """One line of the report diff: " " (both), "-" (A only), "+" (B only) or "@" (a hunk)."""

    mark: str
    text: str


@dataclass(frozen=True)
class Comparison:
    """What the compare page shows of turns `a` and `b`."""

    a: Turn
    b: Turn
    figures: tuple[tuple[str, str, float | None, float | None], ...]  # (name, unit, A, B)
    steps: tuple[StepRow, ...]
    diff: tuple[DiffLine, ...]

    @property
    def deltas(self) -> Iterator[tuple[str, str, float | None, float | None, float | None]]:
        """(name, unit, A, B, B - A) of each figure; unit "ms", "count" or "cost"."""
        for name, unit, a, b in self.figures:
            yield name, unit, a, b, (None if a is None or b is None else b - a)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _steps(report: Mapping[str, Any]) -> list[tuple[str, float]]:
    return [(bar.label, bar.duration_ms) for bar in waterfall(report).bars if bar.kind != "wait"]


def _aligned(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> list[StepRow]:
    matcher = difflib.SequenceMatcher(None, [s[0] for s in a], [s[0] for s in b], autojunk=False)
    rows: list[StepRow] = []
    for tag, a_start, a_end, b_start, b_end in matcher.get_opcodes():
        if tag == "equal":
            pairs = zip(range(a_start, a_end), range(b_start, b_end), strict=True)
            rows += [StepRow(a[i][0], a[i][1], b[j][1]) for i, j in pairs]
            continue
        rows += [StepRow(label, ms, None) for label, ms in a[a_start:a_end]]
        rows += [StepRow(label, None, ms) for label, ms in b[b_start:b_end]]
    return rows


def _lines(report: Any) -> list[str]:
    return json.dumps(report, indent=2, sort_keys=True, default=str).splitlines()


def _diff(a: Any, b: Any) -> list[DiffLine]:
    lines = difflib.unified_diff(_lines(a), _lines(b), "A", "B", lineterm="", n=2)
    out = []
    for line in lines:
        if line.startswith(("---", "+++")):
            continue
        out.append(DiffLine(line[:1] if line[:1] in "+-@" else " ", line[1:]))
    return out


def _count(report: Mapping[str, Any], kind: str) -> float:
    return float(sum(1 for step in report.get("steps") or () if step.get("kind") == kind))


def _figures(turn: Turn, report: Mapping[str, Any]) -> dict[tuple[str, str], float | None]:
    waited = sum(_number(p.get("waited_seconds")) or 0.0 for p in report.get("pauses") or ())
    prices = console_settings()
    cost = turn_cost(report, (turn.input_tokens, turn.output_tokens), prices.prices,
                     prices.currency).cost  # fmt: skip
    return {
        ("Running time", "ms"): _number(report.get("duration_ms")),
        ("Waiting for decisions", "ms"): waited * 1000,
        ("Input tokens", "count"): float(turn.input_tokens),
        ("Output tokens", "count"): float(turn.output_tokens),
        ("Model rounds", "count"): _count(report, "provider_round"),
        ("Tool calls", "count"): _count(report, "tool_call"),
        # None when unpriced: the page shows "—", never a guess (usage_costs).
        (f"Cost ({prices.currency})", "cost"): None if cost is None else float(cost),
    }


def compare_turns(a: Turn, b: Turn) -> Comparison:
    """The comparison of turn `a` with turn `b` (their reports redacted)."""
    rule = current_redaction()
    report_a, report_b = rule.value(a.report or {}), rule.value(b.report or {})
    figures_a, figures_b = _figures(a, report_a), _figures(b, report_b)
    return Comparison(
        a,
        b,
        tuple(
            (name, unit, figures_a[name, unit], figures_b[name, unit]) for name, unit in figures_a
        ),
        tuple(_aligned(_steps(report_a), _steps(report_b))),
        tuple(_diff(report_a, report_b)),
    )
