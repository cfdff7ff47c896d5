"""Eval runs in the console: storing a `--record` run, and the pass rates of the list.

`record_run` is what `python -m chatomon.evals --record` calls once the run is over: one
`EvalRun` and an `EvalCaseResult` per case and provider, with the ids of the turns the
case ran (a recorded run stores its turns in the project's database, so the turn page
opens them). `pass_rates` gives a run's rates per dataset and provider, for the list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from .models import EvalCaseResult, EvalRun

__all__ = ["PassRate", "pass_rates", "record_run"]


@dataclass(frozen=True)
class PassRate:
    """How many of a dataset's cases passed for one provider."""

    dataset: str
    provider: str
    passed: int
    total: int

    @property
    def percent(self) -> int:
        """The rate in whole percent (0 for no case)."""
        return round(100 * self.passed / self.total) if self.total else 0


def record_run(
    results_by_provider: Mapping[str, Sequence[Any]],
    command: str = "",
    started_at: datetime | None = None,
) -> EvalRun:
    """Store a finished run (`chatomon.evals.runner.CaseResult`s by provider label).

    `started_at` is when the run began (default: now); `command` its options, as shown.
    """
    rows = [result for results in results_by_provider.values() for result in results]
    with transaction.atomic():
        run = EvalRun.objects.create(
            started_at=started_at or timezone.now(),
            command=command[:2000],
            providers=list(results_by_provider),
            total=len(rows),
            passed=sum(bool(result.passed) for result in rows),
        )
        EvalCaseResult.objects.bulk_create(_row(run, result) for result in rows)
    return run


def _row(run: EvalRun, result: Any) -> EvalCaseResult:
    turns = [] if result.observation is None else result.observation.turns
    return EvalCaseResult(
        run=run,
        dataset=result.dataset,
        case=result.case.name,
        provider=result.provider,
        passed=result.passed,
        error=result.error or "",
        verdicts=[
            {"judge": v.judge, "passed": v.passed, "reason": v.reason} for v in result.verdicts
        ],
        turn_ids=[turn_id for turn in turns if (turn_id := _turn_id(turn)) is not None],
        tool_calls=result.tool_calls,
        provider_rounds=result.provider_rounds,
        input_tokens=result.usage.input_tokens,
        output_tokens=result.usage.output_tokens,
        duration_ms=result.duration_ms,
    )


def _turn_id(turn: Any) -> str | None:
    if turn.report is not None:
        return str(turn.report.turn_id)
    return next((str(e["turn_id"]) for e in turn.events if e.get("turn_id")), None)


def pass_rates(results: Iterable[EvalCaseResult]) -> list[PassRate]:
    """The rates per dataset and provider, in the order the results ran."""
    counts: dict[tuple[str, str], list[int]] = {}
    for result in results:
        count = counts.setdefault((result.dataset, result.provider), [0, 0])
        count[0] += result.passed
        count[1] += 1
    return [PassRate(d, p, passed, total) for (d, p), (passed, total) in counts.items()]
