"""Run an eval case deterministically: through the evals runner, on the case's own scripts.

The CI gate of the packaged datasets (tests/evals/test_datasets.py) and the judges' tests
use this: the same `run_case` the CLI's `scripted` provider runs.
"""

from __future__ import annotations

from typing import Any

from chatomon.evals.cases import EvalCase
from chatomon.evals.judges import CaseObservation, Verdict
from chatomon.evals.runner import CaseResult, Environment
from chatomon.evals.runner import run_case as run_selected
from chatomon.evals.selection import ProviderChoice, Selected


async def run_scripted(case: EvalCase, *, provider: Any = None) -> CaseResult:
    """`case` through the runner: on its own scripts, or on `provider`."""
    choice = ProviderChoice.scripted() if provider is None else ProviderChoice.of(provider)
    return await run_selected(Selected("test", case), choice, Environment())


async def run_case(case: EvalCase, *, provider: Any = None) -> CaseObservation:
    """Play every turn of `case`, answering its confirmations as the case says."""
    result = await run_scripted(case, provider=provider)
    assert result.observation is not None, result.error
    return result.observation


async def judge_scripted(case: EvalCase) -> tuple[CaseObservation, tuple[Verdict, ...]]:
    """Run `case` on its scripts and judge it; every role must play its whole script."""
    result = await run_scripted(case)
    assert result.error is None, result.error
    assert result.observation is not None
    return result.observation, result.verdicts


def failures(verdicts: tuple[Verdict, ...]) -> list[str]:
    """The failing verdicts, readably."""
    return [str(verdict) for verdict in verdicts if not verdict.passed]
