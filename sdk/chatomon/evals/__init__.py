"""chatomon's evaluations: datasets of conversations run through the real chat pipeline.

Run them from the command line (`python -m chatomon.evals --help`, or `chatomon-evals`)
against a Django project's settings, or from Python and Jupyter with `run(...)`, which
needs no Django. Importing this package loads neither Django nor the pipeline: `run`,
`arun` and `EvalRunResult` load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chatomon.evals.notebook import EvalRunResult, arun, run

__all__ = ["EvalRunResult", "arun", "run"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from chatomon.evals import notebook  # noqa: PLC0415 - loaded on first use

        return getattr(notebook, name)
    raise AttributeError(f"module 'chatomon.evals' has no attribute {name!r}")
