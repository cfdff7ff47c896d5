"""The example notebooks: stripped of outputs in git, and each run top to bottom in a real
Jupyter kernel (nbclient + ipykernel), where a failing cell fails the test; then exported to
HTML with nbconvert, as a reader without the kernel (or GitHub) sees them: the widgets'
static copies stand in for the widget views, and nothing leaks a repr or a log line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NAMES = [
    "01-quickstart.ipynb",
    "02-guardrails.ipynb",
    "03-data-chat.ipynb",
    "04-planned-turns.ipynb",
]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# What each notebook's exported HTML shows only through the widgets' static copies (the
# ChatWidget transcript, show_turns' table) or the reports of expected outcomes.
EXPORTED = {
    "01-quickstart.ipynb": ["Is Acme cheaper?", "<b>4 turns</b>", "Last turn report"],
    "02-guardrails.ipynb": ["<b>4 turns</b>", "TimeoutError → on_error=allow"],
    # The widget was shown waiting; its copy followed the approval in the next cell.
    "03-data-chat.ipynb": [
        "Rename Steel to Iron",
        "<del>Steel</del>",
        "<ins>Iron</ins>",
        ">approved</span>",
        "Steel is now called Iron.",
    ],
    # The reports' plan trees, and the widget's copy of a planned answer.
    "04-planned-turns.ipynb": [
        "Plan (2 tasks, complete)",
        "Plan (2 tasks, partial)",
        '<b>projects</b> <span class="cm-muted">needs parts</span>',
        "How dense is cobalt?",
        "Cobalt has a density of 8.9 g/cm³.",
    ],
}
# What a widget without a static copy, or a log line, leaves in an export.
LEAKS = ["children=(", "Layout(", "&lt;style&gt;", "Error displaying widget"]


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
    rich = [
        o
        for o in shown
        if "chatomon-view" in o.data.get("text/html", "") and WIDGET_VIEW not in o.data
    ]
    assert rich
    assert all("text/markdown" in o.data and "text/plain" in o.data for o in rich)
    # The library's logger stays quiet: expected outcomes are shown by the reports.
    streams = [o for cell in code for o in cell.outputs if o.output_type == "stream"]
    assert [o.text for o in streams if o.name == "stderr"] == []
    # Each widget view has its static copy beside it, for readers without the kernel.
    views = [o for cell in code for o in cell.outputs if WIDGET_VIEW in o.get("data", {})]
    assert views
    for output in views:
        assert "chatomon-view" in output.data["text/html"]
        assert "<style>" not in output.data["text/plain"]
    # Exported as a notebook saved without widget state (JupyterLab's default), opened on
    # GitHub, or after its kernel stopped: nbconvert skips the widget views it cannot draw.
    notebook.metadata.pop("widgets", None)
    html, _ = HTMLExporter().from_notebook_node(notebook)  # type: ignore[no-untyped-call]
    for expected in EXPORTED[name]:
        assert expected in html, expected
    for leak in LEAKS:
        assert leak not in html, leak
