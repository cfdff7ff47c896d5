"""The ChatWidget's message box: a textarea where Enter sends and Shift+Enter adds a line.

The keys themselves are pressed in a real JupyterLab (test_jupyterlab.py); here, the box
each installation gets and what the kernel does with its messages.
"""

from __future__ import annotations

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
    assert "event.stopPropagation()" in module and 'model.send({ event: "submit" })' in module


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
async def test_other_messages_of_the_box_send_nothing() -> None:
    widget = ChatWidget(Atom("a", nucleus=lambda messages, guidance: "ok"))
    widget._input.value = "draft"
    widget._input._handle_custom_msg({"event": "keydown"}, [])
    assert widget._input.value == "draft" and widget.status == "idle"
