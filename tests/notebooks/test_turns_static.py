"""show_turns' saved copy follows the filters applied in the widget, in a real kernel.

The table is displayed first, then a filter is changed in the widget: the notebook saved
afterwards must show the filtered turns, named as filtered, not the unfiltered table of
the moment it was displayed. A browser's change of a dropdown reaches the kernel as a comm
message (the first test sends one); nbclient applies the output updates made while a cell
runs, so the second sets the dropdown's value from a cell, through the same link.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from chatomon import Atom, MaxLength
from chatomon.notebook import show_turns

ROOT = Path(__file__).resolve().parents[2]

SHOWN = """
from chatomon import Atom, MaxLength
from chatomon.notebook import show_turns

atom = Atom("shop", nucleus=lambda m, g: "Sure.", input=[MaxLength(20)], capture_content="full")
reports = [atom.chat_sync(text).report for text in ("a bolt", "x" * 30, "a nut")]
table = show_turns(reports)
table
"""

WHAT_IT_OFFERS = """
action = table.children[0].children[0]
print(action.model_id, list(action.options).index("blocked"))
"""

AFTER = """
print(len(table.visible), table.applied_filters)
"""

PICKED = """
table.children[0].children[0].value = "blocked"
"""


def printed(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def test_a_dropdown_changed_in_the_browser_filters_the_table() -> None:
    cells = [new_code_cell(code) for code in (SHOWN, WHAT_IT_OFFERS, AFTER)]  # type: ignore[no-untyped-call]
    notebook = new_notebook(cells=cells)  # type: ignore[no-untyped-call]
    client = NotebookClient(
        notebook, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    with client.setup_kernel():
        client.execute_cell(notebook.cells[0], 0)
        (shown,) = notebook.cells[0].outputs
        assert "<b>3 turns</b>" in shown.data["text/html"]
        client.execute_cell(notebook.cells[1], 1)
        dropdown, blocked = printed(notebook.cells[1]).split()
        # What the browser sends when "blocked" is picked in the action dropdown.
        change = {"method": "update", "state": {"index": int(blocked)}, "buffer_paths": []}
        message = client.kc.session.msg("comm_msg", {"comm_id": dropdown, "data": change})
        client.kc.shell_channel.send(message)
        client.execute_cell(notebook.cells[2], 2)
    assert printed(notebook.cells[2]).strip() == "1 ['final action blocked']"


def test_the_saved_copy_follows_a_filter_changed_in_the_widget() -> None:
    cells = [new_code_cell(code) for code in (SHOWN, PICKED)]  # type: ignore[no-untyped-call]
    notebook = new_notebook(cells=cells)  # type: ignore[no-untyped-call]
    NotebookClient(
        notebook, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    (output,) = notebook.cells[0].outputs
    assert "application/vnd.jupyter.widget-view+json" in output.data
    html, text = output.data["text/html"], output.data["text/plain"]
    assert "<b>1 of 3 turns · filtered by final action blocked</b>" in html
    assert html.count("<summary>Turn ") == 1  # one turn's report section, not three
    assert text.startswith("1 of 3 turns · filtered by final action blocked\n")
    assert "blocked" in text and "answered" not in text


def test_an_empty_filter_result_names_its_filters() -> None:
    reports = [Atom("a", nucleus=lambda m, g: "ok", input=[MaxLength(5)]).chat_sync("hi").report]
    table = show_turns(reports)
    table.escalated_only = True
    bundle = table._repr_mimebundle_()
    assert bundle is not None
    assert "No turn matches (0 of 1 turn · filtered by escalated only)." in bundle["text/html"]
    assert bundle["text/plain"] == "No turn matches (0 of 1 turn · filtered by escalated only)."
    table.escalated_only = False
    unfiltered = table._repr_mimebundle_()
    assert unfiltered is not None and unfiltered["text/plain"].startswith("1 turn\n")
