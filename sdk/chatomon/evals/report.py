"""The eval reports: a table per dataset, the failures in detail, comparisons, progress.

`format_report(results)` gives one table per dataset (a row per case: passed or failed,
tool calls, provider rounds, tokens, latency, cost) and the overall pass rate; with
`verbose=True` each failing case follows with every failing judge and its reason.
`format_compare({label: results})` gives one column per provider, per case and per
dataset. Cost needs a price per provider (`Price`); without one it shows "—".
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

from chatomon.evals.runner import CaseResult

__all__ = [
    "NO_VALUE",
    "PROGRESS_MIN_CASES",
    "Price",
    "Progress",
    "case_cost",
    "format_compare",
    "format_report",
]

NO_VALUE = "—"
"""Shown where a value is unknown (a cost without a price)."""
PROGRESS_MIN_CASES = 5
"""Runs of more cases than this show a progress bar (on a terminal only)."""


@dataclass(frozen=True)
class Price:
    """A provider's price in currency units per million tokens."""

    input_per_million: float
    output_per_million: float


def case_cost(result: CaseResult, prices: Mapping[str, Price] | None) -> float | None:
    """What the case's tokens cost at its provider's price; None without a price.

    Examples:
        >>> from types import SimpleNamespace
        >>> from chatomon.schemas import TokenUsage
        >>> used = SimpleNamespace(
        ...     provider="p", usage=TokenUsage(input_tokens=1_000_000, output_tokens=500_000)
        ... )
        >>> case_cost(used, {"p": Price(0.4, 1.6)})
        1.2
        >>> case_cost(used, {}) is None
        True
    """
    price = (prices or {}).get(result.provider)
    if price is None:
        return None
    usage = result.usage
    return (
        usage.input_tokens * price.input_per_million
        + usage.output_tokens * price.output_per_million
    ) / 1_000_000


def format_report(
    results: Sequence[CaseResult],
    *,
    verbose: bool = False,
    prices: Mapping[str, Price] | None = None,
) -> str:
    """One provider's results: a table per dataset, the overall rate, failures if `verbose`."""
    lines: list[str] = []
    for dataset, rows in _by_dataset(results).items():
        passed = sum(result.passed for result in rows)
        share = f"{passed}/{len(rows)} passed ({_rate(passed, len(rows))})"
        lines.append(f"{dataset} [{rows[0].provider}]: {share}")
        table: list[tuple[str, ...]] = [
            ("case", "result", "tools", "rounds", "tokens", "latency", "cost")
        ]
        table += [_row(result, prices) for result in rows]
        table.append(_total_row(rows, prices))
        lines += _table(table)
        lines.append("")
    passed = sum(result.passed for result in results)
    lines.append(f"Overall: {passed}/{len(results)} passed ({_rate(passed, len(results))})")
    failures = [result for result in results if not result.passed]
    if verbose and failures:
        lines += ["", "Failures:"]
        for result in failures:
            lines += _failure(result)
    return "\n".join(lines)


def format_compare(results_by_provider: Mapping[str, Sequence[CaseResult]]) -> str:
    """Several providers side by side: a column each, per case and per dataset."""
    labels = list(results_by_provider)
    cells: dict[tuple[str, str], dict[str, CaseResult]] = {}
    for label, results in results_by_provider.items():
        for result in results:
            cells.setdefault((result.dataset, result.case.name), {})[label] = result
    lines: list[str] = []
    datasets = list(dict.fromkeys(dataset for dataset, _ in cells))
    summary: list[tuple[str, ...]] = [("dataset", *labels)]
    for dataset in datasets:
        keys = [key for key in cells if key[0] == dataset]
        table: list[tuple[str, ...]] = [("case", *labels)]
        table += [(key[1], *(_verdict(cells[key].get(label)) for label in labels)) for key in keys]
        lines.append(f"{dataset}:")
        lines += _table(table)
        lines.append("")
        summary.append(
            (dataset, *(_share([cells[k].get(label) for k in keys]) for label in labels))
        )
    every = [(label, list(results)) for label, results in results_by_provider.items()]
    summary.append(("overall", *(_share(list(results)) for _label, results in every)))
    lines.append("Per dataset:")
    lines += _table(summary)
    return "\n".join(lines)


class Progress:
    """A one-line progress bar on a terminal, for runs of more than a few cases.

    Quiet (writes nothing) when `stream` is not a TTY or the run is small, so that logs
    and pipes get the report alone.
    """

    def __init__(self, total: int, stream: TextIO | None = None, *, width: int = 30) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.done = 0
        self.active = total > PROGRESS_MIN_CASES and _is_tty(self.stream)

    def advance(self, result: CaseResult) -> None:
        """Count one finished case and redraw the bar."""
        self.done += 1
        if not self.active:
            return
        filled = self.width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        name = f"{result.provider} {result.dataset}/{result.case.name}"[:50]
        self.stream.write(f"\r[{bar}] {self.done}/{self.total} {name:<50}")
        self.stream.flush()

    def finish(self) -> None:
        """End the bar's line (nothing when quiet)."""
        if self.active:
            self.stream.write("\r" + " " * (self.width + 70) + "\r")
            self.stream.flush()


def _is_tty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def _by_dataset(results: Sequence[CaseResult]) -> dict[str, list[CaseResult]]:
    grouped: dict[str, list[CaseResult]] = {}
    for result in results:
        grouped.setdefault(result.dataset, []).append(result)
    return grouped


def _row(result: CaseResult, prices: Mapping[str, Price] | None) -> tuple[str, ...]:
    return (
        result.case.name,
        "PASS" if result.passed else ("ERROR" if result.error else "FAIL"),
        str(result.tool_calls),
        str(result.provider_rounds),
        str(result.usage.total_tokens),
        f"{result.duration_ms:.0f} ms",
        _money(case_cost(result, prices)),
    )


def _total_row(rows: Sequence[CaseResult], prices: Mapping[str, Price] | None) -> tuple[str, ...]:
    costs = [case_cost(result, prices) for result in rows]
    known = [cost for cost in costs if cost is not None]
    return (
        "total",
        f"{sum(result.passed for result in rows)}/{len(rows)}",
        str(sum(result.tool_calls for result in rows)),
        str(sum(result.provider_rounds for result in rows)),
        str(sum(result.usage.total_tokens for result in rows)),
        f"{sum(result.duration_ms for result in rows):.0f} ms",
        _money(sum(known) if known and len(known) == len(costs) else None),
    )


def _failure(result: CaseResult) -> list[str]:
    lines = [
        f"  {result.dataset}/{result.case.name} [{result.provider}]: {result.case.description}"
    ]
    if result.error:
        lines.append(f"    error: {result.error}")
    lines += [f"    {verdict.judge}: {verdict.reason}" for verdict in result.failures]
    return lines


def _verdict(result: CaseResult | None) -> str:
    if result is None:
        return NO_VALUE
    return "PASS" if result.passed else "FAIL"


def _share(results: Sequence[CaseResult | None]) -> str:
    ran = [result for result in results if result is not None]
    passed = sum(result.passed for result in ran)
    return f"{passed}/{len(ran)} ({_rate(passed, len(ran))})"


def _rate(passed: int, total: int) -> str:
    return f"{100 * passed / total:.0f}%" if total else NO_VALUE


def _money(value: float | None) -> str:
    return NO_VALUE if value is None else f"{value:.4f}"


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]

    def line(row: Sequence[str]) -> str:
        first = row[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return [line(rows[0]), rule, *(line(row) for row in rows[1:])]
