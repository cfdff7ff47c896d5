"""In a real kernel, a click on Approve (a widget comm message, as a browser sends it) is
handled while the turn waits, and the resumed turn streams into the widget."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

ROOT = Path(__file__).resolve().parents[2]
"""The checkout: the kernel runs there, so it imports the `tests` package."""

SETUP = """
from chatomon.chat.store import MemoryStore
from chatomon.notebook import ChatWidget
from chatomon.providers import ScriptedProvider
from tests.chat.services import RENAME, confirm_settings, service

renamed = []
provider = ScriptedProvider([[RENAME], ["Renamed."]])
widget = ChatWidget(service(MemoryStore(), provider, log=renamed, settings=confirm_settings()))
widget.send("Rename Steel")
await widget.wait()
print(widget.status, widget._approve_button.model_id)
"""

AFTER = """
await widget.wait()
print(widget.status, [entry["name"] for entry in renamed], widget.messages[-1]["text"])
"""


def printed(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def test_a_click_message_approves_the_waiting_confirmation() -> None:
    cells = [new_code_cell(SETUP), new_code_cell(AFTER)]  # type: ignore[no-untyped-call]
    notebook = new_notebook(cells=cells)  # type: ignore[no-untyped-call]
    client = NotebookClient(
        notebook, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    with client.setup_kernel():
        client.execute_cell(notebook.cells[0], 0)
        status, button = printed(notebook.cells[0]).split()
        assert status == "awaiting_confirmation"
        click = {"method": "custom", "content": {"event": "click"}}
        message = client.kc.session.msg("comm_msg", {"comm_id": button, "data": click})
        client.kc.shell_channel.send(message)
        client.execute_cell(notebook.cells[1], 1)
    assert printed(notebook.cells[1]).strip() == "idle ['Iron'] Renamed."


SHOWN_FIRST = """
from chatomon import Atom
from chatomon.notebook import ChatWidget

widget = ChatWidget(Atom("echo", nucleus=lambda m, g: "Echo: " + m[-1].content))
widget
"""

CHATTED = """
widget.send("<i>hello</i>")
await widget.wait()
"""


def test_the_saved_copy_of_a_widget_shown_first_follows_the_conversation() -> None:
    # A widget is displayed, then used: the output a notebook saves must hold the turns,
    # not the empty panel of the moment it was displayed.
    cells = [new_code_cell(SHOWN_FIRST), new_code_cell(CHATTED)]  # type: ignore[no-untyped-call]
    notebook = new_notebook(cells=cells)  # type: ignore[no-untyped-call]
    client = NotebookClient(
        notebook, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute()
    (output,) = notebook.cells[0].outputs
    assert "application/vnd.jupyter.widget-view+json" in output.data
    assert "&lt;i&gt;hello&lt;/i&gt;" in output.data["text/html"]
    assert "Echo: &lt;i&gt;hello&lt;/i&gt;" in output.data["text/html"]
    assert "You: <i>hello</i>" in output.data["text/plain"]
    assert "No messages yet" not in output.data["text/plain"]
