"""Judges of eval cases: each turns a `CaseObservation` into a `Verdict`.

`judge_case(observation)` runs the five judges (tool_sequence, result_accuracy,
answer_coverage, groundedness, safety); a failing verdict names its judge and says why.
"""

from __future__ import annotations

from chatomon.evals.judges.checks import (
    JUDGES,
    answer_coverage,
    args_match,
    groundedness,
    judge_case,
    result_accuracy,
    safety,
    tool_sequence,
)
from chatomon.evals.judges.observation import CaseObservation, TurnObservation, Verdict

__all__ = [
    "JUDGES",
    "CaseObservation",
    "TurnObservation",
    "Verdict",
    "answer_coverage",
    "args_match",
    "groundedness",
    "judge_case",
    "result_accuracy",
    "safety",
    "tool_sequence",
]
