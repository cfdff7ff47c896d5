"""The ChatWidget's message box: Enter sends, Shift+Enter starts a new line.

ipywidgets has no such box: its one-line `Text` reports Enter to the kernel but holds one
line, and its `Textarea` reports no key at all. `message_input()` gives an anywidget
(`MessageInput`: a textarea whose few lines of front-end code tell the kernel of Enter)
when anywidget is installed (``pip install anywidget``; JupyterLab 4, Notebook 7 and VS
Code load it with no extension to enable), else ipywidgets' `Text` (Enter sends; one line).

Both report Enter with a custom message ``{"event": "submit"}`` on the widget's comm.
ipywidgets' `Text` sends it after the box's value; `MessageInput` puts the text in the
message (``"text"``) and empties the box itself, and takes ``{"event": "restore", "text"}``
back when the kernel cannot send it yet.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from typing import Any

import ipywidgets

__all__ = ["HAS_ANYWIDGET", "PLACEHOLDER", "message_input"]

HAS_ANYWIDGET = importlib.util.find_spec("anywidget") is not None
"""Whether the multi-line box (anywidget) is available."""
PLACEHOLDER = "Message (Enter sends, Shift+Enter: new line)"

# The box's front end. Keys stop at the box: JupyterLab 4 reads shortcuts (Shift+Enter runs
# the cell) from keydown events that bubble to the document, so the box keeps its own.
_ESM = """
function render({ model, el }) {
  const area = document.createElement("textarea");
  area.className = "chatomon-message-input";
  area.rows = 2;
  area.placeholder = model.get("placeholder");
  area.setAttribute("aria-label", "Message");
  area.value = model.get("value");
  const push = () => { model.set("value", area.value); model.save_changes(); };
  area.addEventListener("input", push);
  area.addEventListener("keydown", (event) => {
    event.stopPropagation();
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      // The text rides with the message and the box empties here: the widget manager may
      // still hold the last value update back, and sent after the submit it would put the
      // sent text back in the box. A kernel that refuses the text sends it back.
      const text = area.value;
      area.value = "";
      push();
      model.send({ event: "submit", text });
    }
  });
  model.on("msg:custom", (content) => {
    if (content.event !== "restore") return;
    area.value = area.value ? content.text + "\\n" + area.value : content.text;
    push();
  });
  model.on("change:value", () => {
    if (area.value !== model.get("value")) area.value = model.get("value");
  });
  el.setAttribute("data-lm-suppress-shortcuts", "true");
  el.appendChild(area);
}
export default { render };
"""

_CSS = """
.chatomon-message-input {
  width: 100%; box-sizing: border-box; resize: vertical; min-height: 2.6em;
  font: inherit; color: inherit; background: var(--jp-layout-color1, transparent);
  border: 1px solid var(--jp-border-color1, #9e9e9e); border-radius: 2px; padding: 4px 6px;
}
.chatomon-message-input:focus { outline: 1px solid var(--jp-brand-color1, #1976d2); }
"""


@cache  # the class is defined once, not per widget
def _anywidget_class() -> type[Any]:
    import anywidget  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415
    import traitlets  # noqa: PLC0415

    class MessageInput(anywidget.AnyWidget):  # type: ignore[misc,unused-ignore]
        """A multi-line message box: Enter submits, Shift+Enter adds a line."""

        _esm = _ESM
        _css = _CSS
        value = traitlets.Unicode("").tag(sync=True)
        placeholder = traitlets.Unicode(PLACEHOLDER).tag(sync=True)

    return MessageInput


def message_input(*, multiline: bool | None = None, **layout: Any) -> Any:
    """The message box: the anywidget textarea when available, else ipywidgets' `Text`.

    Args:
        multiline: True for the textarea (needs anywidget), False for the one-line `Text`;
            None picks the textarea when anywidget is installed.
        **layout: The box's ipywidgets layout (``width="60%"``).

    Raises:
        ImportError: multiline=True without anywidget.
    """
    if multiline is None:
        multiline = HAS_ANYWIDGET
    if multiline:
        return _anywidget_class()(layout=layout)
    return ipywidgets.Text(placeholder="Message (Enter sends)", layout=layout)
