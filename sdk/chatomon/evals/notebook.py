"""`chatomon.evals.run(...)`: the evals from Python or Jupyter, without Django.

```python
import chatomon.evals

result = chatomon.evals.run("basic_queries", compare=["scripted", "local"])
result              # a table of pass rates per dataset and provider (rich display)
result.to_dataframe()   # one row per case and provider (needs pandas)
```
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from chatomon.chat.pipeline.service import AtomConfig
from chatomon.errors import OptionalDependencyError
from chatomon.evals.cases import LEGACY_DATASETS, load_dataset, load_dataset_file
from chatomon.evals.report import format_compare, format_report
from chatomon.evals.runner import CaseResult, Environment, run_cases
from chatomon.evals.selection import SCRIPTED, ProviderChoice, select_cases

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EvalRunResult", "arun", "run"]

T = TypeVar("T")


@dataclass(frozen=True)
class EvalRunResult:
    """The results of one run, by provider label, with a rich display and a DataFrame.

    Attributes:
        results: Each provider's case results, in run order.
    """

    results: Mapping[str, tuple[CaseResult, ...]]

    @property
    def passed(self) -> bool:
        """Whether every case passed for every provider."""
        return all(result.passed for rows in self.results.values() for result in rows)

    def rows(self) -> list[dict[str, Any]]:
        """One plain row per case and provider (what `to_dataframe` holds)."""
        return [
            {
                "provider": result.provider,
                "dataset": result.dataset,
                "case": result.case.name,
                "tier": result.case.tier,
                "passed": result.passed,
                "failed_judges": ", ".join(v.judge for v in result.failures),
                "error": result.error,
                "tool_calls": result.tool_calls,
                "provider_rounds": result.provider_rounds,
                "input_tokens": result.usage.input_tokens,
                "output_tokens": result.usage.output_tokens,
                "duration_ms": result.duration_ms,
            }
            for rows in self.results.values()
            for result in rows
        ]

    def pass_rates(self) -> dict[tuple[str, str], float]:
        """The pass rate per (dataset, provider)."""
        counts: dict[tuple[str, str], list[int]] = {}
        for row in self.rows():
            count = counts.setdefault((row["dataset"], row["provider"]), [0, 0])
            count[0] += bool(row["passed"])
            count[1] += 1
        return {key: passed / total for key, (passed, total) in counts.items()}

    def report(self, *, verbose: bool = False) -> str:
        """The CLI's text report: per dataset for one provider, a comparison for several."""
        if len(self.results) == 1:
            return format_report(next(iter(self.results.values())), verbose=verbose)
        return format_compare(self.results)

    def to_dataframe(self) -> pd.DataFrame:
        """The rows as a pandas DataFrame.

        Raises:
            OptionalDependencyError: When pandas is not installed.
        """
        try:
            import pandas as pd  # noqa: PLC0415 - optional, and slow to import
        except ImportError as error:
            raise OptionalDependencyError(
                "pandas", "pandas", feature="EvalRunResult.to_dataframe()"
            ) from error
        return pd.DataFrame(self.rows())

    def __str__(self) -> str:
        return self.report()

    def _repr_html_(self) -> str:
        rates = self.pass_rates()
        providers = list(self.results)
        datasets = list(dict.fromkeys(dataset for dataset, _ in rates))
        head = "".join(f"<th>{html.escape(label)}</th>" for label in providers)
        body = ""
        for dataset in datasets:
            cells = "".join(
                f"<td>{_percent(rates.get((dataset, label)))}</td>" for label in providers
            )
            body += f"<tr><th>{html.escape(dataset)}</th>{cells}</tr>"
        failed = sum(not row["passed"] for row in self.rows())
        caption = "every case passed" if failed == 0 else f"{failed} case result(s) failed"
        return (
            f"<table><caption>chatomon evals: {caption}</caption>"
            f"<thead><tr><th>dataset</th>{head}</tr></thead><tbody>{body}</tbody></table>"
        )


async def arun(
    datasets: str | Sequence[str] | None = None,
    *,
    provider: Any = SCRIPTED,
    compare: Sequence[Any] | None = None,
    model: str | None = None,
    fixture: str | None = None,
    tier: int | None = None,
    tags: Sequence[str] = (),
    dataset_files: Sequence[str | Path] = (),
    atom_config: AtomConfig | None = None,
) -> EvalRunResult:
    """`run` inside a running event loop."""
    names = [datasets] if isinstance(datasets, str) else list(datasets or ())
    loaded = [load_dataset(name) for name in names]
    loaded += [load_dataset_file(path) for path in dataset_files]
    if not loaded:
        loaded = [load_dataset(name) for name in LEGACY_DATASETS]
    selected = select_cases(loaded, tier=tier, tags=tags)
    environment = Environment(atom_config=atom_config or AtomConfig(), fixture=fixture)
    results: dict[str, tuple[CaseResult, ...]] = {}
    for choice in [_choice(one, model) for one in (compare or [provider])]:
        results[choice.label] = tuple(await run_cases(selected, choice, environment))
    return EvalRunResult(results)


def run(
    datasets: str | Sequence[str] | None = None,
    *,
    provider: Any = SCRIPTED,
    compare: Sequence[Any] | None = None,
    model: str | None = None,
    fixture: str | None = None,
    tier: int | None = None,
    tags: Sequence[str] = (),
    dataset_files: Sequence[str | Path] = (),
    atom_config: AtomConfig | None = None,
) -> EvalRunResult:
    """Run eval datasets on the built-in fixtures and return the results.

    Args:
        datasets: Packaged dataset names (default: every one but planned_orchestration,
            unless `dataset_files` are given).
        provider: "scripted" (each case's own scripts), a provider name ("local",
            "openai:gpt-4.1-mini", a dotted path), or a provider object.
        compare: Several providers (names or objects) instead of `provider`.
        model: A model name for the providers built from names.
        fixture: Run every case on this fixture ("toy", "large") instead of its own.
        tier: Only the cases of this tier.
        tags: Only the cases holding every one of these tags.
        dataset_files: Dataset YAML files of your own.
        atom_config: The orbitals every turn runs with (default: none).

    Works in Jupyter too: with an event loop already running, the run gets its own loop
    in a worker thread.
    """
    return _blocking(
        arun(
            datasets,
            provider=provider,
            compare=compare,
            model=model,
            fixture=fixture,
            tier=tier,
            tags=tags,
            dataset_files=dataset_files,
            atom_config=atom_config,
        )
    )


def _choice(provider: Any, model: str | None) -> ProviderChoice:
    if isinstance(provider, str):
        if provider == SCRIPTED:
            return ProviderChoice.scripted()
        return ProviderChoice.named(provider, {"model": model} if model else None)
    return ProviderChoice.of(provider)


def _blocking(coroutine: Coroutine[Any, Any, T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    # Jupyter runs a loop already: asyncio.run would refuse, so the run gets a thread.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _percent(rate: float | None) -> str:
    return "—" if rate is None else f"{100 * rate:.0f}%"
