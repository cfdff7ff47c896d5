"""The example notebooks: stripped of outputs in git, and each run top to bottom in a real
Jupyter kernel (nbclient + ipykernel), where a failing cell fails the test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NAMES = ["01-quickstart.ipynb", "02-guardrails.ipynb", "03-data-chat.ipynb"]


def read(name: str) -> Any:
    return nbformat.read(NOTEBOOKS / name, as_version=4)  # type: ignore[no-untyped-call]


def test_the_example_notebooks_are_there() -> None:
    assert sorted(path.name for path in NOTEBOOKS.glob("*.ipynb")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_outputs_are_stripped(name: str) -> None:
    notebook = read(name)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
    assert "widgets" not in notebook.metadata  # no saved widget state either


@pytest.mark.parametrize("name", NAMES)
def test_the_notebook_runs_in_a_kernel(name: str) -> None:
    notebook = read(name)
    client = NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()  # raises CellExecutionError at the first failing cell
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code)
    errors = [o for cell in code for o in cell.outputs if o.output_type == "error"]
    assert errors == []
    shown = [o for cell in code for o in cell.outputs if o.output_type == "execute_result"]
    # The objects a cell ends with display richly: scoped HTML plus the text fallbacks.
    rich = [o for o in shown if "text/html" in o.data and "chatomon-view" in o.data["text/html"]]
    assert rich
    assert all("text/markdown" in o.data and "text/plain" in o.data for o in rich)
