"""In a real kernel, a click on Approve (a widget comm message, as a browser sends it) is
handled while the turn waits, and the resumed turn streams into the widget."""

from __future__ import annotations

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

SETUP = """
from pydantic import BaseModel
from chatomon.chat.service import ChatService
from chatomon.chat.store import MemoryStore
from chatomon.chat.tools.context import ToolSettings
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.fixtures import toy_registry
from chatomon.data.mutations import mutation
from chatomon.notebook import ChatWidget
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import tool_call

class Rename(BaseModel):
    material_id: int
    name: str

renamed = []
registry = toy_registry()

@mutation(name="renameMaterial", input=Rename, manager="MaterialManager")
def rename(actor, data):
    renamed.append(data.name)
    return {"id": data.material_id, "name": data.name}

registry.register(rename)
names = ["renameMaterial"]
toolset = Toolset(registry, ToolSettings(allowed_mutations=names, confirm_mutations=names))
arguments = {"mutation": "renameMaterial", "input": {"material_id": 1, "name": "Iron"}}
call = tool_call("mutate", arguments)
provider = ScriptedProvider([[call], ["Renamed."]])
widget = ChatWidget(ChatService(store=MemoryStore(), provider=provider, toolset=toolset))
widget.send("Rename Steel")
await widget.wait()
print(widget.status, widget._approve_button.model_id)
"""

AFTER = """
await widget.wait()
print(widget.status, renamed, widget.messages[-1]["text"])
"""


def printed(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def test_a_click_message_approves_the_waiting_confirmation() -> None:
    cells = [new_code_cell(SETUP), new_code_cell(AFTER)]  # type: ignore[no-untyped-call]
    notebook = new_notebook(cells=cells)  # type: ignore[no-untyped-call]
    client = NotebookClient(notebook, timeout=60, kernel_name="python3")
    with client.setup_kernel():
        client.execute_cell(notebook.cells[0], 0)
        status, button = printed(notebook.cells[0]).split()
        assert status == "awaiting_confirmation"
        click = {"method": "custom", "content": {"event": "click"}}
        message = client.kc.session.msg("comm_msg", {"comm_id": button, "data": click})
        client.kc.shell_channel.send(message)
        client.execute_cell(notebook.cells[1], 1)
    assert printed(notebook.cells[1]).strip() == "idle ['Iron'] Renamed."
