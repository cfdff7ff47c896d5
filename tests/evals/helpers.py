"""Shared by the eval runner, report and trace tests: the test datasets and results."""

from __future__ import annotations

from pathlib import Path

from chatomon.evals.cases import Dataset, EvalCase, load_dataset_file
from chatomon.evals.judges import CaseObservation, TurnObservation, Verdict
from chatomon.evals.runner import CaseResult
from chatomon.schemas import TokenUsage

DATA = Path(__file__).parent / "data"


def dataset(name: str) -> Dataset:
    """One of the datasets in tests/evals/data/ by file stem."""
    return load_dataset_file(DATA / f"{name}.yaml")


def case(name: str = "count_parts", **fields: object) -> EvalCase:
    return EvalCase.model_validate(
        {
            "name": name,
            "description": fields.pop("description", f"The {name} case."),
            "fixture": "toy",
            "turns": [{"user": "How many parts are there?"}],
            **fields,
        }
    )


def result(
    name: str = "count_parts",
    *,
    dataset: str = "basic",
    provider: str = "scripted",
    verdicts: tuple[Verdict, ...] = (Verdict("answer_coverage", True),),
    tool_calls: int = 1,
    rounds: int = 2,
    usage: TokenUsage | None = None,
    duration_ms: float = 12.0,
    error: str | None = None,
) -> CaseResult:
    the_case = case(name)
    turn = TurnObservation(
        user="How many parts are there?",
        answer="Three.",
        tool_calls=tuple(
            {"id": f"call-{n}", "name": "query", "args": {}} for n in range(tool_calls)
        ),
    )
    observation = CaseObservation(
        the_case,
        (turn,),
        duration_ms=duration_ms,
        usage=usage or TokenUsage(input_tokens=30, output_tokens=7),
        provider_rounds=rounds,
    )
    if error is not None:
        return CaseResult(dataset, the_case, provider, error=error)
    return CaseResult(dataset, the_case, provider, verdicts, observation)
