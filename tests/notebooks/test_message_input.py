"""The ChatWidget's message box: a textarea where Enter sends and Shift+Enter adds a line.

The keys themselves are pressed in a real JupyterLab (test_jupyterlab.py); here, the box
each installation gets and what the kernel does with its messages.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import ipywidgets
import pytest

from chatomon import Atom
from chatomon.notebook import ChatWidget
from chatomon.notebook.message_input import HAS_ANYWIDGET, PLACEHOLDER, message_input

needs_anywidget = pytest.mark.skipif(not HAS_ANYWIDGET, reason="anywidget is not installed")


@needs_anywidget
def test_with_anywidget_the_box_is_a_textarea_that_submits_on_enter_only() -> None:
    box = message_input(width="60%")
    assert type(box).__name__ == "MessageInput" and box.placeholder == PLACEHOLDER
    assert box.layout.width == "60%"
    module = box._esm
    # Enter without Shift (and not while composing) submits; every key stays in the box.
    assert 'event.key === "Enter" && !event.shiftKey && !event.isComposing' in module
    assert "event.stopPropagation()" in module and 'model.send({ event: "submit", text })' in module
    # The box empties itself before the message: a value update still held back by the
    # widget manager then carries "", not the sent text.
    assert module.index('area.value = "";') < module.index('model.send({ event: "submit"')
    assert 'content.event !== "restore"' in module


@needs_anywidget
def test_the_box_front_end_is_valid_javascript(tmp_path: Path) -> None:
    # A syntax error there shows only in a browser, as a box that never appears.
    node = shutil.which("node")
    assert node, "node is installed by `make test` (the widget's JS tests need it)"
    module = tmp_path / "message_input.mjs"
    module.write_text(message_input()._esm)
    checked = subprocess.run(
        [node, "--check", str(module)], check=False, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr


def test_without_anywidget_the_box_is_the_one_line_text() -> None:
    box = message_input(multiline=False)
    assert isinstance(box, ipywidgets.Text) and "Enter sends" in box.placeholder


@needs_anywidget
async def test_a_multi_line_message_is_sent_whole_by_the_submit_message() -> None:
    widget = ChatWidget(Atom("a", nucleus=lambda messages, guidance: "ok"))
    assert type(widget._input).__name__ == "MessageInput"
    # What the box's front end sends on Enter: the value (kept lines), then "submit".
    widget._input.value = "first line\nsecond line"
    widget._input._handle_custom_msg({"event": "submit"}, [])
    assert widget._input.value == "" and widget.status == "running"
    await widget.wait()
    assert widget.messages[0] == {"role": "user", "text": "first line\nsecond line"}


@needs_anywidget
async def test_the_submit_message_carries_its_text_whatever_value_came_before() -> None:
    widget = ChatWidget(Atom("a", nucleus=lambda messages, guidance: "ok"))
    widget._input.value = "first li"  # the last keys' value update has not arrived yet
    widget._input._handle_custom_msg({"event": "submit", "text": "first line\nsecond"}, [])
    # The box emptied itself (its "" follows); the kernel writes nothing back to it.
    assert widget._input.value == "first li" and widget.status == "running"
    await widget.wait()
    assert widget.messages[0] == {"role": "user", "text": "first line\nsecond"}


@needs_anywidget
async def test_a_text_submitted_while_a_turn_runs_goes_back_to_the_box(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    widget = ChatWidget(Atom("a", nucleus=lambda messages, guidance: "ok"))
    sent: list[object] = []
    monkeypatch.setattr(widget._input, "send", sent.append)
    widget.send("first")
    widget._input._handle_custom_msg({"event": "submit", "text": "second"}, [])
    assert sent == [{"event": "restore", "text": "second"}]
    await widget.wait()
    assert [entry["text"] for entry in widget.messages if entry["role"] == "user"] == ["first"]
    widget._input._handle_custom_msg({"event": "submit", "text": "  "}, [])
    assert sent == [{"event": "restore", "text": "second"}] and widget.status == "idle"


@needs_anywidget
async def test_other_messages_of_the_box_send_nothing() -> None:
    widget = ChatWidget(Atom("a", nucleus=lambda messages, guidance: "ok"))
    widget._input.value = "draft"
    widget._input._handle_custom_msg({"event": "keydown"}, [])
    assert widget._input.value == "draft" and widget.status == "idle"
